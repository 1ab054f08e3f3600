//! promptfoo's `is-sql` and `contains-sql` (`docs/promptfoo.md#is-sql`): the answer parses as
//! SQL of `value.databaseType` (MySQL by default), passes promptfoo's extra syntax checks
//! (balanced backticks, no `SELECT a b FROM` missing a comma, no `generate_series` in MySQL),
//! and touches only the tables and columns `value.allowedTables` / `value.allowedColumns`
//! allow: `{type}::{db}::{table}` and `{type}::{table}::{column}` authorities matched by the
//! allow-list entries as anchored, case-insensitive regular expressions. `contains-sql` checks
//! each ```` ```sql ```` (or unlabelled) fenced block, or the whole answer when there is none.
//!
//! agentv parses with `sqlparser` where promptfoo uses node-sql-parser: the two grammars agree
//! on common statements, not on every dialect corner, and a syntax error's wording is agentv's.
//! The authorities follow node-sql-parser's: statement kind (`select`, `insert`, `update`,
//! `delete`, `create`, `DROP`), `null` for an unqualified name, an alias read as its table,
//! `(.*)` for `*`, columns in expressions listed as `select`.

use std::ops::ControlFlow;
use std::sync::{Arc, LazyLock};

use futures::future::BoxFuture;
use sqlparser::ast::{
    AssignmentTarget, Expr, ObjectName, ObjectNamePart, SelectItem, SelectItemQualifiedWildcardKind, Statement,
    TableFactor, Visit, Visitor,
};
use sqlparser::dialect::{
    BigQueryDialect, Dialect, GenericDialect, HiveDialect, MsSqlDialect, MySqlDialect, PostgreSqlDialect,
    RedshiftSqlDialect, SQLiteDialect, SnowflakeDialect,
};
use sqlparser::parser::Parser;

use super::promptfoo_check::{self, PfResult};
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind, Node, describe};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&IS_SQL, &CONTAINS_SQL];

pub(crate) static IS_SQL: GraderEntry = GraderEntry {
    name: "is-sql",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["is-sql"],
    },
    doc: "Passes when the whole answer is SQL of `value.databaseType`, within the allowed tables and columns.",
    keys: &IS_KEYS,
    parse: parse_is,
};

pub(crate) static CONTAINS_SQL: GraderEntry = GraderEntry {
    name: "contains-sql",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["contains-sql"],
    },
    doc: "Passes when the answer (a fenced SQL block in it, or all of it) is SQL of `value.databaseType`.",
    keys: &CONTAINS_KEYS,
    parse: parse_contains,
};

const OWN: &[Key] = &[Key::new(
    "value",
    Kind::Any,
    "`{databaseType: MySQL, allowedTables: [select::null::users], allowedColumns: [...]}`.",
)];
const IS_KEYS: KeyTable = KeyTable::new("is-sql", "A SQL check.", &[OWN]);
const CONTAINS_KEYS: KeyTable = KeyTable::new("contains-sql", "A check for SQL in the answer.", &[OWN]);

fn parse_is(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    parse(f, cx, true)
}

fn parse_contains(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    parse(f, cx, false)
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>, whole: bool) -> Option<Arc<dyn Grader>> {
    let what = f.what().to_owned();
    let mut check = SqlOutput {
        whole,
        database: "MySQL".to_owned(),
        allowed_tables: None,
        allowed_columns: None,
        inverse: promptfoo_check::inverse(cx),
    };
    let Some(node) = f.take("value").filter(|n| !n.is_null()) else {
        return Some(Arc::new(check));
    };
    if node.as_map().is_none() {
        cx.drop_grader(
            node.pos,
            format!("`value` of {what} must be a mapping, found {}", describe(node)),
            Some("write `value: {databaseType: MySQL, allowedTables: [...]}`".to_owned()),
        );
        return None;
    }
    if let Some(db) = node.get("databaseType").and_then(Node::as_str).filter(|s| !s.is_empty()) {
        check.database = db.to_owned();
    }
    check.allowed_tables = strings(node.get("allowedTables"), "allowedTables", &what, cx)?;
    check.allowed_columns = strings(node.get("allowedColumns"), "allowedColumns", &what, cx)?;
    Some(Arc::new(check))
}

/// An allow-list: absent, or a list of strings (`None` after reporting anything else).
fn strings(node: Option<&Node>, key: &str, what: &str, cx: &mut ParseContext<'_>) -> Option<Option<Vec<String>>> {
    let Some(node) = node.filter(|n| !n.is_null()) else {
        return Some(None);
    };
    let items = node
        .as_seq()
        .and_then(|items| items.iter().map(|i| i.as_str().map(str::to_owned)).collect());
    if items.is_none() {
        cx.drop_grader(
            node.pos,
            format!("`value.{key}` of {what} must be a list of strings, found {}", describe(node)),
            Some(format!("write `{key}: [\"select::null::users\"]`")),
        );
        return None;
    }
    Some(items)
}

/// An `is-sql` or `contains-sql` check as configured.
#[derive(Debug, Clone)]
pub struct SqlOutput {
    /// `is-sql`; else `contains-sql`.
    pub whole: bool,
    /// promptfoo's `databaseType`, as written (its reasons quote it).
    pub database: String,
    pub allowed_tables: Option<Vec<String>>,
    pub allowed_columns: Option<Vec<String>>,
    pub inverse: bool,
}

impl Grader for SqlOutput {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { self.result(&candidate(ctx)).grade() })
    }
}

impl SqlOutput {
    /// promptfoo's result for `output`.
    pub fn result(&self, output: &str) -> PfResult {
        if self.whole {
            let problems = self.problems(output);
            let pass = problems.is_empty() != self.inverse;
            return PfResult::check(pass, || {
                if problems.is_empty() {
                    "The output SQL statement is valid".to_owned()
                } else {
                    problems.join(" ")
                }
            });
        }
        let blocks = sql_blocks(output);
        let candidates = if blocks.is_empty() { vec![output.to_owned()] } else { blocks };
        let mut reason = "Output does not contain valid SQL".to_owned();
        let mut found = false;
        for sql in candidates.iter().filter(|c| !super::js::trim(c).is_empty()) {
            let problems = self.problems(sql);
            if problems.is_empty() {
                found = true;
                break;
            }
            reason = problems.join(" ");
        }
        PfResult::check(found != self.inverse, || {
            if found {
                "The output SQL statement is valid".to_owned()
            } else {
                reason
            }
        })
    }

    /// promptfoo's failure reasons for one statement text (none: valid).
    fn problems(&self, output: &str) -> Vec<String> {
        let syntax = format!(
            "SQL statement does not conform to the provided {} database syntax.",
            self.database
        );
        let sql = super::js::trim(output);
        let mut problems = Vec::new();
        if sql.is_empty() {
            problems.push(syntax.clone());
        }
        if sql.matches('`').count() % 2 == 1 {
            problems.push(syntax.clone());
        }
        let mysql_family = matches!(self.database.as_str(), "MySQL" | "MariaDB");
        let pattern = if mysql_family { &*MYSQL_MISSING_COMMA } else { &*MISSING_COMMA };
        if pattern
            .is_match(&strip_ignored(sql, &self.database))
            .unwrap_or(false)
        {
            problems.push(syntax.clone());
        }
        if self.database == "MySQL" && GENERATE_SERIES.is_match(sql) {
            problems.push(syntax.clone());
        }
        let parsed = statements(output, &self.database);
        if parsed.is_err() {
            problems.push(syntax);
        }
        for (allowed, kind) in [(&self.allowed_tables, "table"), (&self.allowed_columns, "column")] {
            if let Some(allowed) = allowed
                && let Some(problem) = unauthorized(parsed.as_deref(), allowed, kind)
            {
                problems.push(problem);
            }
        }
        problems
    }
}

/// The reason the allow-list of `kind` refuses, if it does.
fn unauthorized(parsed: Result<&[Statement], &String>, allowed: &[String], kind: &str) -> Option<String> {
    let statements = match parsed {
        Ok(s) => s,
        Err(e) => return Some(format!("SQL validation failed: {e}.")),
    };
    if allowed.is_empty() {
        return None;
    }
    let lists = authorities(statements);
    let (found, mut patterns) = match kind {
        "table" => (lists.tables, allowed.to_vec()),
        _ => (lists.columns, with_unqualified(allowed)),
    };
    patterns.dedup();
    let matchers: Vec<_> = patterns
        .iter()
        .filter_map(|p| super::js_regex::compile(&format!("^{p}$"), "i").ok())
        .collect();
    let denied = found
        .iter()
        .find(|a| !matchers.iter().any(|m| m.is_match(a).unwrap_or(false)))?;
    if found.is_empty() {
        return Some(format!(
            "SQL validation failed: authority = '{denied}' is required in {kind} whiteList."
        ));
    }
    Some(format!(
        "SQL references unauthorized {kind}(s). Found: [{}]. Allowed: [{}].",
        found.join(", "),
        allowed.join(", ")
    ))
}

/// promptfoo also allows `type::null::column` for each `type::table::column`.
fn with_unqualified(allowed: &[String]) -> Vec<String> {
    let mut out = allowed.to_vec();
    for item in allowed {
        let parts: Vec<&str> = item.split("::").collect();
        if let [kind, table, column] = parts.as_slice()
            && *table != "null"
        {
            let alt = format!("{kind}::null::{column}");
            if !out.contains(&alt) {
                out.push(alt);
            }
        }
    }
    out
}

/// How deep the parser may nest (sqlparser's own default is 50): each level costs several
/// stack frames, and graders run on the runtime's 2 MiB worker stacks.
const RECURSION_LIMIT: usize = 24;

/// The statements of `sql` in the dialect `database` names (node-sql-parser's list, any case).
fn statements(sql: &str, database: &str) -> Result<Vec<Statement>, String> {
    let lower = database.to_lowercase();
    let dialect: Box<dyn Dialect> = match lower.as_str() {
        "mysql" | "mariadb" => Box::new(MySqlDialect {}),
        "postgresql" => Box::new(PostgreSqlDialect {}),
        "bigquery" => Box::new(BigQueryDialect {}),
        "sqlite" => Box::new(SQLiteDialect {}),
        "transactsql" => Box::new(MsSqlDialect {}),
        "snowflake" => Box::new(SnowflakeDialect {}),
        "redshift" => Box::new(RedshiftSqlDialect {}),
        "hive" => Box::new(HiveDialect {}),
        "athena" | "trino" | "db2" | "flinksql" | "noql" => Box::new(GenericDialect {}),
        _ => return Err(format!("{database} is not supported currently")),
    };
    let parsed = Parser::new(dialect.as_ref())
        .with_recursion_limit(RECURSION_LIMIT)
        .try_with_sql(super::js::trim(sql))
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| e.to_string())?;
    if let Some(refused) = beyond_grammar(&parsed, &lower) {
        return Err(refused.to_owned());
    }
    Ok(parsed)
}

/// What sqlparser accepts in `database` where node-sql-parser's grammar does not: `SELECT
/// TOP n` outside Transact-SQL, table-valued functions in a MySQL or MariaDB `FROM`.
fn beyond_grammar(statements: &[Statement], database: &str) -> Option<&'static str> {
    struct Refuse<'d> {
        database: &'d str,
        found: Option<&'static str>,
    }
    impl Visitor for Refuse<'_> {
        type Break = ();
        fn pre_visit_select(&mut self, select: &sqlparser::ast::Select) -> ControlFlow<()> {
            if select.top.is_some() && self.database != "transactsql" {
                self.found = Some("TOP is Transact-SQL");
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            let function = matches!(factor, TableFactor::Table { args: Some(_), .. } | TableFactor::Function { .. });
            if function && matches!(self.database, "mysql" | "mariadb") {
                self.found = Some("no table-valued functions in MySQL");
            }
            ControlFlow::Continue(())
        }
    }
    let mut refuse = Refuse { database, found: None };
    for statement in statements {
        let _ = statement.visit(&mut refuse);
    }
    refuse.found
}

/// The table and column authorities the statements touch, each once, in the order met.
#[derive(Debug, Default, PartialEq)]
struct Authorities {
    tables: Vec<String>,
    columns: Vec<String>,
}

impl Authorities {
    fn table(&mut self, kind: &str, name: &ObjectName) {
        let parts = parts(name);
        let (db, table) = match parts.as_slice() {
            [.., db, table] => (db.clone(), table.clone()),
            [table] => ("null".to_owned(), table.clone()),
            [] => return,
        };
        push(&mut self.tables, format!("{kind}::{db}::{table}"));
    }

    fn column(&mut self, kind: &str, table: &str, column: &str) {
        push(&mut self.columns, format!("{kind}::{table}::{column}"));
    }
}

fn push(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

fn parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn authorities(statements: &[Statement]) -> Authorities {
    let mut out = Authorities::default();
    for statement in statements {
        let mut walk = Walk {
            out: &mut out,
            kind: kind_of(statement),
            queries: 0,
            aliases: aliases(statement),
        };
        let _ = statement.visit(&mut walk);
        if let Statement::Drop { names, .. } = statement {
            for name in names {
                out.table("DROP", name);
            }
        }
        statement_columns(statement, &mut out);
    }
    out
}

/// `alias → table` for every aliased table of the statement (a column may name the alias
/// before the `FROM` that defines it).
fn aliases(statement: &Statement) -> Vec<(String, String)> {
    struct Aliases(Vec<(String, String)>);
    impl Visitor for Aliases {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                name, alias: Some(alias), ..
            } = factor
            {
                self.0
                    .push((alias.name.value.clone(), parts(name).pop().unwrap_or_default()));
            }
            ControlFlow::Continue(())
        }
    }
    let mut found = Aliases(Vec::new());
    let _ = statement.visit(&mut found);
    found.0
}

/// The kind node-sql-parser names a statement by.
fn kind_of(statement: &Statement) -> &'static str {
    match statement {
        Statement::Query(_) => "select",
        Statement::Insert(_) => "insert",
        Statement::Update(_) => "update",
        Statement::Delete(_) => "delete",
        Statement::CreateTable(_) => "create",
        Statement::Drop { .. } => "DROP",
        _ => "other",
    }
}

/// The columns a statement names outside expressions (its target columns).
fn statement_columns(statement: &Statement, out: &mut Authorities) {
    match statement {
        Statement::Insert(insert) => {
            let table = parts_of_insert(insert);
            if insert.columns.is_empty() {
                out.column("insert", &table, "(.*)");
            }
            for column in &insert.columns {
                let name = parts(column).pop().unwrap_or_default();
                out.column("insert", &table, &name);
            }
        }
        Statement::Update(update) => {
            for assignment in &update.assignments {
                let targets = match &assignment.target {
                    AssignmentTarget::ColumnName(n) => vec![n],
                    AssignmentTarget::Tuple(ns) => ns.iter().collect(),
                };
                for name in targets {
                    out.column("update", "null", &parts(name).pop().unwrap_or_default());
                }
            }
        }
        Statement::Delete(delete) => {
            let tables = match &delete.from {
                sqlparser::ast::FromTable::WithFromKeyword(t) | sqlparser::ast::FromTable::WithoutKeyword(t) => t,
            };
            for t in tables {
                if let TableFactor::Table { name, .. } = &t.relation {
                    out.column("delete", &parts(name).pop().unwrap_or_default(), "(.*)");
                }
            }
        }
        Statement::CreateTable(create) => {
            for column in &create.columns {
                out.column("select", "null", &column.name.value);
                out.column("create", "null", &column.name.value);
            }
        }
        _ => {}
    }
}

fn parts_of_insert(insert: &sqlparser::ast::Insert) -> String {
    match &insert.table {
        sqlparser::ast::TableObject::TableName(name) => parts(name).pop().unwrap_or_default(),
        other => other.to_string(),
    }
}

/// Collects tables (by the statement's kind, or `select` inside a query) and the columns
/// expressions name.
struct Walk<'o> {
    out: &'o mut Authorities,
    kind: &'static str,
    queries: usize,
    /// `alias → table` of the statement's tables.
    aliases: Vec<(String, String)>,
}

impl Walk<'_> {
    fn table_of(&self, qualifier: &str) -> String {
        self.aliases
            .iter()
            .find(|(alias, _)| alias == qualifier)
            .map_or_else(|| qualifier.to_owned(), |(_, table)| table.clone())
    }
}

impl Visitor for Walk<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _: &sqlparser::ast::Query) -> ControlFlow<()> {
        self.queries += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &sqlparser::ast::Query) -> ControlFlow<()> {
        self.queries -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
        let kind = if self.queries > 0 { "select" } else { self.kind };
        if kind != "other" {
            self.out.table(kind, relation);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &sqlparser::ast::Select) -> ControlFlow<()> {
        for item in &select.projection {
            match item {
                SelectItem::Wildcard(_) => self.out.column("select", "null", "(.*)"),
                SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                    let table = self.table_of(&parts(name).pop().unwrap_or_default());
                    self.out.column("select", &table, "(.*)");
                }
                _ => {}
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        match expr {
            Expr::Identifier(column) => self.out.column("select", "null", &column.value),
            Expr::CompoundIdentifier(idents) if idents.len() >= 2 => {
                let table = self.table_of(&idents[idents.len() - 2].value);
                self.out.column("select", &table, &idents[idents.len() - 1].value);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

const IDENTIFIER: &str = "[A-Za-z_][A-Za-z0-9_]*";

/// promptfoo's "likely missing comma" pattern: `SELECT [modifiers] a b FROM`.
fn missing_comma(modifiers: &str) -> fancy_regex::Regex {
    let pattern = format!(
        r"(?i)\bselect\s+(?:{modifiers}\s+)*(?!{modifiers}\b){IDENTIFIER}\s+{IDENTIFIER}\s+from\b"
    );
    super::js_regex::compile(&pattern.replace("(?i)", ""), "i").expect("a valid pattern")
}

static MISSING_COMMA: LazyLock<fancy_regex::Regex> = LazyLock::new(|| missing_comma("(?:all|distinct)"));
static MYSQL_MISSING_COMMA: LazyLock<fancy_regex::Regex> = LazyLock::new(|| {
    missing_comma(
        "(?:all|distinct(?:row)?|high_priority|straight_join|sql_(?:big_result|buffer_result|cache|calc_found_rows|no_cache|small_result))",
    )
});
static GENERATE_SERIES: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"(?i-u:\bgenerate_series)\s*\(").expect("a valid pattern"));

/// promptfoo's `stripIgnoredSqlText`: quoted text becomes ` ? `, comments a space, before the
/// missing-comma check reads the statement.
fn strip_ignored(sql: &str, database: &str) -> String {
    let brackets = matches!(database, "TransactSQL" | "Sqlite");
    let chars: Vec<char> = sql.chars().collect();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let (end, replacement) = if c == '\'' || c == '"' || c == '`' || (c == '[' && brackets) {
            (quoted_end(&chars, i), " ? ")
        } else if (c == '-' && next == Some('-')) || c == '#' {
            let mut end = i + 1;
            while end < chars.len() && chars[end] != '\r' && chars[end] != '\n' {
                end += 1;
            }
            (end, " ")
        } else if c == '/' && next == Some('*') {
            (find(&chars, i + 2, &['*', '/']).map_or(chars.len(), |at| at + 2), " ")
        } else if c == '$'
            && let Some(delimiter) = dollar_delimiter(&chars[i..])
        {
            let end = find(&chars, i + delimiter.len(), &delimiter).map_or(chars.len(), |at| at + delimiter.len());
            (end, " ? ")
        } else {
            out.push(c);
            i += 1;
            continue;
        };
        out.push_str(replacement);
        i = end;
    }
    out
}

fn quoted_end(chars: &[char], start: usize) -> usize {
    let close = if chars[start] == '[' { ']' } else { chars[start] };
    let mut i = start + 1;
    while i < chars.len() {
        if close != ']' && chars[i] == '\\' {
            i += 2;
            continue;
        }
        if chars[i] == close {
            if chars.get(i + 1) == Some(&close) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    chars.len()
}

fn find(chars: &[char], from: usize, needle: &[char]) -> Option<usize> {
    (from..chars.len()).find(|&i| chars[i..].starts_with(needle))
}

/// `$$` or `$tag$` at the start of `chars`.
fn dollar_delimiter(chars: &[char]) -> Option<Vec<char>> {
    let mut end = 1;
    if chars.get(1).is_some_and(|c| c.is_ascii_alphabetic() || *c == '_') {
        end = 2;
        while chars.get(end).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_') {
            end += 1;
        }
    }
    (chars.get(end) == Some(&'$')).then(|| chars[..=end].to_vec())
}

/// promptfoo's `extractSqlCodeBlocks`: the trimmed bodies of fenced blocks labelled `sql` or
/// not labelled, closed by a fence of the same character at least as long.
fn sql_blocks(output: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut open: Option<(char, usize, bool, Vec<&str>)> = None;
    for line in output.split("\r\n").flat_map(|l| l.split(['\r', '\n'])) {
        match &mut open {
            None => {
                if let Some((fence, info)) = fence(line) {
                    let language = super::js::trim(info).to_lowercase();
                    let first = fence.chars().next().unwrap_or('`');
                    open = Some((first, fence.len(), language.is_empty() || language == "sql", Vec::new()));
                }
            }
            Some((ch, len, is_sql, body)) => match fence(line) {
                Some((close, rest))
                    if close.starts_with(*ch)
                    && close.len() >= *len
                    && rest.trim_matches([' ', '\t']).is_empty() =>
                {
                    if *is_sql {
                        blocks.push(super::js::trim(&body.join("\n")).to_owned());
                    }
                    open = None;
                }
                _ => body.push(line),
            },
        }
    }
    blocks
}

/// A fence line: up to three spaces or tabs, three or more of one of `` ` `` and `~`, then
/// the info text (after spaces and tabs).
fn fence(line: &str) -> Option<(&str, &str)> {
    let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = rest.len() - rest.trim_start_matches(ch).len();
    if run < 3 {
        return None;
    }
    let info = rest[run..].trim_start_matches([' ', '\t']);
    if info.contains(['\r', '\n']) {
        return None;
    }
    Some((&rest[..run], info))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_check::testing::agrees_with_promptfoo;

    #[test]
    fn is_sql_agrees_with_promptfoo() {
        agrees_with_promptfoo("is-sql");
    }

    #[test]
    fn contains_sql_agrees_with_promptfoo() {
        agrees_with_promptfoo("contains-sql");
    }

    fn check(whole: bool, database: &str, tables: Option<&[&str]>, columns: Option<&[&str]>) -> SqlOutput {
        let list = |l: Option<&[&str]>| l.map(|l| l.iter().map(|s| (*s).to_owned()).collect());
        SqlOutput {
            whole,
            database: database.to_owned(),
            allowed_tables: list(tables),
            allowed_columns: list(columns),
            inverse: false,
        }
    }

    const MYSQL: &str = "SQL statement does not conform to the provided MySQL database syntax.";

    /// Expectations checked against promptfoo 0.121.20: its extra syntax checks, each adding
    /// its reason.
    #[test]
    fn is_sql_applies_promptfoos_syntax_heuristics() {
        let twice = format!("{MYSQL} {MYSQL}");
        for (sql, database, want) in [
            ("SELECT a b FROM t", "MySQL", Some(MYSQL)),
            ("SELECT DISTINCT a b FROM t", "MySQL", Some(MYSQL)),
            ("SELECT `a FROM t", "MySQL", Some(twice.as_str())),
            ("SELECT * FROM generate_series(1, 3)", "MySQL", Some(twice.as_str())),
            ("SELECT * FROM generate_series(1, 3)", "PostgreSQL", None),
            ("SELECT \"a b\" FROM t", "MySQL", None),
            ("", "MySQL", Some(MYSQL)),
            ("   ", "MySQL", Some(MYSQL)),
            ("SELECT 1 -- a b from\n", "MySQL", None),
            ("SELECT * FROM users WHERE name = $$a b from$$", "PostgreSQL", None),
            ("SELECT [a] FROM t", "TransactSQL", None),
        ] {
            let got = check(true, database, None, None).result(sql);
            assert_eq!(got.pass, want.is_none(), "{sql}: {got:?}");
            assert_eq!(got.reason, want.unwrap_or("Assertion passed"), "{sql}");
        }
    }

    /// Expectations checked against promptfoo 0.121.20 (node-sql-parser's authorities).
    #[test]
    fn is_sql_allow_lists_name_authorities_as_promptfoo_does() {
        for (sql, database, tables, columns, want) in [
            (
                "SELECT id FROM users",
                "Oracle",
                Some(&["select::null::users"][..]),
                None,
                Some("SQL statement does not conform to the provided Oracle database syntax. SQL validation failed: Oracle is not supported currently."),
            ),
            (
                "SELECT u.name FROM users u WHERE u.id = 1",
                "MySQL",
                None,
                Some(&["select::users::name"][..]),
                Some("SQL references unauthorized column(s). Found: [select::users::name, select::users::id]. Allowed: [select::users::name]."),
            ),
            ("SELECT u.name FROM users u WHERE u.id = 1", "MySQL", None, Some(&["select::users::(name|id)"][..]), None),
            (
                "SELECT * FROM users",
                "MySQL",
                None,
                Some(&["select::null::id"][..]),
                Some("SQL references unauthorized column(s). Found: [select::null::(.*)]. Allowed: [select::null::id]."),
            ),
            (
                "DROP TABLE users",
                "MySQL",
                Some(&["select::null::users"][..]),
                None,
                Some("SQL references unauthorized table(s). Found: [DROP::null::users]. Allowed: [select::null::users]."),
            ),
            (
                "SELECT a FROM db1.t1",
                "MySQL",
                Some(&["select::null::t1"][..]),
                None,
                Some("SQL references unauthorized table(s). Found: [select::db1::t1]. Allowed: [select::null::t1]."),
            ),
            ("SELECT a FROM t", "MySQL", Some(&[][..]), None, None),
        ] {
            let got = check(true, database, tables, columns).result(sql);
            assert_eq!(got.pass, want.is_none(), "{sql}: {got:?}");
            assert_eq!(got.reason, want.unwrap_or("Assertion passed"), "{sql}");
        }
    }

    /// Expectations checked against promptfoo 0.121.20.
    #[test]
    fn contains_sql_reads_sql_and_unlabelled_fences() {
        for (text, want) in [
            ("text\n~~~sql\nSELECT 1\n~~~\nmore", None),
            ("```python\nprint(1)\n```", Some(MYSQL)),
            ("```js\nx\n```\n```\nSELEC 1\n```", Some(MYSQL)),
            ("```sql\nSELEC 1\n```\n```\nSELECT 2\n```", None),
        ] {
            let got = check(false, "MySQL", None, None).result(text);
            assert_eq!(got.pass, want.is_none(), "{text}: {got:?}");
            assert_eq!(got.reason, want.unwrap_or("Assertion passed"), "{text}");
        }
    }

    #[test]
    fn deeply_nested_sql_is_refused_without_overflowing() {
        let sql = format!("SELECT {}1{}", "(".repeat(100_000), ")".repeat(100_000));
        let got = check(true, "MySQL", Some(&["select::null::t"][..]), None).result(&sql);
        assert!(!got.pass);
    }
}
