//! promptfoo's `derivedMetrics` (`docs/promptfoo.md#derived-metrics`): a metric computed from
//! the named scores a prompt has accumulated. Its `value` is an arithmetic expression in the
//! grammar promptfoo evaluates it with (mathjs): numbers, metric names (letters, digits, `_`,
//! `$`; so `a-b` is a subtraction, as there), `+ - * / ^` (`^` binds tighter than a leading
//! minus and groups to the right), parentheses, `pi`, `e` and a few functions. It is parsed
//! once at load, so a mistake is an error at its line before anything runs, and evaluated after
//! each row of its prompt, over the sums of that prompt's named scores and `__count` (the rows
//! so far); a name no score has yet leaves the metric at its last value (0 at first), as
//! promptfoo does.

use std::collections::HashMap;

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Name(String),
    Neg(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
}

/// The functions an expression may call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Min,
    Max,
    Abs,
    Sqrt,
    Round,
    Floor,
    Ceil,
    Exp,
    Log,
    Pow,
}

const FUNCS: &[(&str, Func)] = &[
    ("min", Func::Min),
    ("max", Func::Max),
    ("abs", Func::Abs),
    ("sqrt", Func::Sqrt),
    ("round", Func::Round),
    ("floor", Func::Floor),
    ("ceil", Func::Ceil),
    ("exp", Func::Exp),
    ("log", Func::Log),
    ("pow", Func::Pow),
];

/// Why an expression does not parse: the byte offset and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at character {}", .at + 1)]
pub struct ParseError {
    pub at: usize,
    pub message: String,
}

/// A named metric `derivedMetrics` defines.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedMetric {
    pub name: String,
    pub expr: Expr,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Name(String),
    Sym(char),
}

fn tokens(text: &str) -> Result<Vec<(usize, Tok)>, ParseError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == '.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    i = j;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let n = text[start..i].parse::<f64>().map_err(|_| ParseError {
                at: start,
                message: format!("`{}` is not a number", &text[start..i]),
            })?;
            out.push((start, Tok::Num(n)));
        } else if c.is_ascii_alphabetic() || c == '_' || c == '$' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'$') {
                i += 1;
            }
            out.push((start, Tok::Name(text[start..i].to_owned())));
        } else if "+-*/^(),".contains(c) {
            out.push((start, Tok::Sym(c)));
            i += 1;
        } else {
            let ch = text[start..].chars().next().unwrap_or(c);
            return Err(ParseError {
                at: start,
                message: format!("`{ch}` is not allowed (use numbers, metric names, + - * / ^ and parentheses)"),
            });
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<(usize, Tok)>,
    pos: usize,
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(_, t)| t)
    }

    fn at(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |(at, _)| *at)
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError {
            at: self.at(),
            message: message.into(),
        })
    }

    fn eat(&mut self, sym: char) -> bool {
        if self.peek() == Some(&Tok::Sym(sym)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// sum := product (('+' | '-') product)*
    fn sum(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.product()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Sym('+')) => Op::Add,
                Some(Tok::Sym('-')) => Op::Sub,
                _ => return Ok(left),
            };
            self.pos += 1;
            left = Expr::Bin(op, Box::new(left), Box::new(self.product()?));
        }
    }

    /// product := unary (('*' | '/') unary)*
    fn product(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Sym('*')) => Op::Mul,
                Some(Tok::Sym('/')) => Op::Div,
                _ => return Ok(left),
            };
            self.pos += 1;
            left = Expr::Bin(op, Box::new(left), Box::new(self.unary()?));
        }
    }

    /// unary := ('-' | '+') unary | power — so `-2^2` is `-(2^2)`, as in mathjs.
    fn unary(&mut self) -> Result<Expr, ParseError> {
        if self.eat('-') {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        if self.eat('+') {
            return self.unary();
        }
        self.power()
    }

    /// power := atom ('^' unary)? — right-grouping, and `2^-1` is allowed.
    fn power(&mut self) -> Result<Expr, ParseError> {
        let base = self.atom()?;
        if self.eat('^') {
            return Ok(Expr::Bin(Op::Pow, Box::new(base), Box::new(self.unary()?)));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Expr, ParseError> {
        let Some(tok) = self.peek().cloned() else {
            return self.fail("the expression ends too early");
        };
        match tok {
            Tok::Num(n) => {
                self.pos += 1;
                Ok(Expr::Num(n))
            }
            Tok::Sym('(') => {
                self.pos += 1;
                let inner = self.sum()?;
                if !self.eat(')') {
                    return self.fail("a `(` is not closed");
                }
                Ok(inner)
            }
            Tok::Name(name) => {
                let at = self.at();
                self.pos += 1;
                if self.peek() == Some(&Tok::Sym('(')) {
                    return self.call(&name, at);
                }
                Ok(Expr::Name(name))
            }
            Tok::Sym(c) => self.fail(format!("unexpected `{c}`")),
        }
    }

    fn call(&mut self, name: &str, at: usize) -> Result<Expr, ParseError> {
        let Some(func) = FUNCS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f) else {
            let known: Vec<&str> = FUNCS.iter().map(|(n, _)| *n).collect();
            return Err(ParseError {
                at,
                message: format!("unknown function `{name}` (known: {})", known.join(", ")),
            });
        };
        self.pos += 1;
        let mut args = Vec::new();
        if !self.eat(')') {
            loop {
                args.push(self.sum()?);
                if self.eat(')') {
                    break;
                }
                if !self.eat(',') {
                    return self.fail(format!("expected `,` or `)` in the arguments of `{name}`"));
                }
            }
        }
        let arity_ok = match func {
            Func::Min | Func::Max => !args.is_empty(),
            Func::Log | Func::Round => (1..=2).contains(&args.len()),
            Func::Pow => args.len() == 2,
            _ => args.len() == 1,
        };
        if !arity_ok {
            return self.fail(format!("`{name}` does not take {} argument(s)", args.len()));
        }
        Ok(Expr::Call(func, args))
    }
}

/// Parses a `derivedMetrics` value.
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    let mut parser = Parser {
        toks: tokens(text)?,
        pos: 0,
        end: text.len(),
    };
    let expr = parser.sum()?;
    match parser.peek() {
        None => Ok(expr),
        Some(Tok::Sym(c)) => parser.fail(format!("unexpected `{c}`")),
        Some(_) => parser.fail("two values without an operator between them"),
    }
}

/// The value of `expr` over `scope`; `None` when it names something the scope lacks.
pub fn eval(expr: &Expr, scope: &HashMap<String, f64>) -> Option<f64> {
    Some(match expr {
        Expr::Num(n) => *n,
        Expr::Name(n) => match (scope.get(n), n.as_str()) {
            (Some(v), _) => *v,
            (None, "pi") => std::f64::consts::PI,
            (None, "e") => std::f64::consts::E,
            (None, _) => return None,
        },
        Expr::Neg(e) => -eval(e, scope)?,
        Expr::Bin(op, a, b) => {
            let (a, b) = (eval(a, scope)?, eval(b, scope)?);
            match op {
                Op::Add => a + b,
                Op::Sub => a - b,
                Op::Mul => a * b,
                Op::Div => a / b,
                Op::Pow => a.powf(b),
            }
        }
        Expr::Call(f, args) => {
            let vals = args.iter().map(|a| eval(a, scope)).collect::<Option<Vec<f64>>>()?;
            call(*f, &vals)
        }
    })
}

fn call(f: Func, v: &[f64]) -> f64 {
    let first = v.first().copied().unwrap_or(f64::NAN);
    let second = v.get(1).copied();
    match f {
        Func::Min => v.iter().copied().fold(f64::INFINITY, f64::min),
        Func::Max => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        Func::Abs => first.abs(),
        Func::Sqrt => first.sqrt(),
        Func::Round => match second {
            Some(digits) => {
                let scale = 10f64.powf(digits);
                (first * scale).round() / scale
            }
            None => first.round(),
        },
        Func::Floor => first.floor(),
        Func::Ceil => first.ceil(),
        Func::Exp => first.exp(),
        Func::Log => match second {
            Some(base) => first.ln() / base.ln(),
            None => first.ln(),
        },
        Func::Pow => first.powf(second.unwrap_or(f64::NAN)),
    }
}

/// One prompt's accumulated named scores, with its derived metrics updated after each row as
/// promptfoo does.
#[derive(Debug, Default, Clone)]
pub struct Accumulator {
    /// Metric name → the sum over rows of its weighted assertion scores, then the derived
    /// metrics' current values.
    pub scores: HashMap<String, f64>,
    /// The order names first appeared in, for stable output.
    pub order: Vec<String>,
    rows: u64,
}

impl Accumulator {
    fn add(&mut self, name: &str, value: f64) {
        match self.scores.get_mut(name) {
            Some(slot) => *slot += value,
            None => {
                self.scores.insert(name.to_owned(), value);
                self.order.push(name.to_owned());
            }
        }
    }

    /// Adds a row's weighted named-score sums, then recomputes each derived metric in order;
    /// one that cannot be computed (a name no score has yet) keeps its value.
    pub fn row<'a>(&mut self, weighted: impl IntoIterator<Item = (&'a str, f64)>, derived: &[DerivedMetric]) {
        for (name, value) in weighted {
            self.add(name, value);
        }
        self.rows += 1;
        let mut scope = self.scores.clone();
        scope.insert("__count".to_owned(), self.rows as f64);
        for metric in derived {
            self.add(&metric.name, 0.0);
            if let Some(v) = eval(&metric.expr, &scope) {
                self.scores.insert(metric.name.clone(), v);
                scope.insert(metric.name.clone(), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str, scope: &[(&str, f64)]) -> Option<f64> {
        let scope = scope.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        eval(&parse(text).expect(text), &scope)
    }

    #[test]
    fn expressions_follow_mathjs_precedence() {
        let cases: &[(&str, f64)] = &[
            ("1 + 2 * 3", 7.0),
            ("(1 + 2) * 3", 9.0),
            ("2 ^ 3 ^ 2", 512.0),
            ("-2 ^ 2", -4.0),
            ("2 ^ -1", 0.5),
            ("1 / 2", 0.5),
            ("10 - 4 - 3", 3.0),
            ("1e2 + .5", 100.5),
            ("max(1, 3, 2) - min(4, 5)", -1.0),
            ("round(2 / 3, 2)", 0.67),
            ("log(8, 2)", 3.0),
            ("a-b", 1.0),
            ("accuracy / __count", 0.75),
        ];
        let scope = [("a", 3.0), ("b", 2.0), ("accuracy", 1.5), ("__count", 2.0)];
        for (text, want) in cases {
            let got = value(text, &scope).expect(text);
            assert!((got - want).abs() < 1e-9, "{text}: {got} != {want}");
        }
    }

    #[test]
    fn a_name_no_score_has_is_no_value() {
        assert_eq!(value("missing + 1", &[]), None);
        assert_eq!(value("pi", &[]), Some(std::f64::consts::PI));
        assert_eq!(value("pi", &[("pi", 2.0)]), Some(2.0));
    }

    #[test]
    fn bad_expressions_say_where() {
        let cases: &[(&str, usize, &str)] = &[
            ("a +", 3, "ends too early"),
            ("(a + b", 6, "not closed"),
            ("a b", 2, "without an operator"),
            ("a % b", 2, "not allowed"),
            ("foo(1)", 0, "unknown function"),
            ("a + )", 4, "unexpected `)`"),
            ("", 0, "ends too early"),
        ];
        for (text, at, message) in cases {
            let err = parse(text).expect_err(text);
            assert_eq!(err.at, *at, "{text}: {err}");
            assert!(err.message.contains(message), "{text}: {err}");
        }
    }

    #[test]
    fn derived_metrics_are_recomputed_after_each_row() {
        let derived = vec![
            DerivedMetric {
                name: "mean".into(),
                expr: parse("acc / __count").expect("parses"),
            },
            DerivedMetric {
                name: "twice".into(),
                expr: parse("mean * 2").expect("parses"),
            },
            DerivedMetric {
                name: "later".into(),
                expr: parse("tone + 1").expect("parses"),
            },
        ];
        let mut acc = Accumulator::default();
        acc.row([("acc", 1.0)], &derived);
        assert_eq!(acc.scores["later"], 0.0);
        acc.row([("acc", 0.0), ("tone", 0.5)], &derived);
        assert_eq!(acc.scores["acc"], 1.0);
        assert_eq!(acc.scores["mean"], 0.5);
        assert_eq!(acc.scores["twice"], 1.0);
        assert_eq!(acc.scores["later"], 1.5);
        assert_eq!(acc.order, ["acc", "mean", "twice", "later", "tone"]);
    }
}
