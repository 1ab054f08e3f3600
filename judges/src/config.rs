//! Reading the evaluator's `config` (its extra YAML keys) strictly: a value of the wrong type is
//! an error naming the key and what would fix it, and so is a key the judge does not know, so
//! a typo (`treshold`) cannot silently leave a setting at its default.

use serde_json::{Map, Value};

use crate::Error;

/// A reader over one evaluator's `config` that remembers which keys the judge asked for.
pub struct Config<'a> {
    map: &'a Map<String, Value>,
    judge: &'static str,
    known: Vec<&'static str>,
}

impl<'a> Config<'a> {
    /// `judge` names the judge in the message about unknown keys (`agentv-faithfulness`).
    pub fn new(map: &'a Map<String, Value>, judge: &'static str) -> Self {
        Self {
            map,
            judge,
            known: Vec::new(),
        }
    }

    /// The value of `key`; `null` counts as absent.
    pub fn value(&mut self, key: &'static str) -> Option<&'a Value> {
        self.known.push(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub fn string(&mut self, key: &'static str) -> Result<Option<&'a str>, Error> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(wrong(key, "a string", other)),
        }
    }

    pub fn boolean(&mut self, key: &'static str, default: bool) -> Result<bool, Error> {
        match self.value(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(wrong(key, "true or false", other)),
        }
    }

    /// A number in [0, 1] (a score or a threshold).
    pub fn unit(&mut self, key: &'static str) -> Result<Option<f64>, Error> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(x) if (0.0..=1.0).contains(&x) => Ok(Some(x)),
                _ => Err(wrong(key, "a number from 0 to 1", &Value::Number(n.clone()))),
            },
            Some(other) => Err(wrong(key, "a number from 0 to 1", other)),
        }
    }

    /// A finite number ≥ 0.
    pub fn non_negative(&mut self, key: &'static str) -> Result<Option<f64>, Error> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(x) if x >= 0.0 && x.is_finite() => Ok(Some(x)),
                _ => Err(wrong(key, "a number ≥ 0", &Value::Number(n.clone()))),
            },
            Some(other) => Err(wrong(key, "a number ≥ 0", other)),
        }
    }

    /// A string or a list of strings (a single string is a list of one).
    pub fn strings(&mut self, key: &'static str) -> Result<Option<Vec<String>>, Error> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(vec![s.clone()])),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(Error::Config {
                        key: format!("{key}[{i}]"),
                        message: format!("expected a string, got {}", describe(other)),
                    }),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(wrong(key, "a string or a list of strings", other)),
        }
    }

    /// One of a fixed set of words.
    pub fn choice<T: Copy>(&mut self, key: &'static str, options: &[(&str, T)], default: T) -> Result<T, Error> {
        let names = || options.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
        match self.value(key) {
            None => Ok(default),
            Some(Value::String(s)) => options
                .iter()
                .find(|(name, _)| name == s)
                .map(|(_, v)| *v)
                .ok_or_else(|| Error::Config {
                    key: key.to_owned(),
                    message: format!("unknown value `{s}`; use one of: {}", names()),
                }),
            Some(other) => Err(wrong(key, &format!("one of {}", names()), other)),
        }
    }

    /// Fails on the first key the judge did not ask for.
    pub fn finish(self) -> Result<(), Error> {
        let mut known = self.known;
        known.sort_unstable();
        known.dedup();
        match self.map.keys().find(|k| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some(key) => Err(Error::Config {
                key: key.clone(),
                message: format!(
                    "{} has no such setting; its settings are: {}",
                    self.judge,
                    known.join(", ")
                ),
            }),
        }
    }
}

fn wrong(key: &str, want: &str, got: &Value) -> Error {
    Error::Config {
        key: key.to_owned(),
        message: format!("expected {want}, got {}", describe(got)),
    }
}

/// A value as a message shows it: its JSON, cut short.
pub fn describe(value: &Value) -> String {
    crate::outcome::excerpt(&value.to_string(), 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn wrong_types_and_unknown_keys_name_the_key_and_the_fix() {
        let m = map(json!({"threshold": 1.5, "mode": "fast", "strict": "yes", "tools": [1], "treshold": 0.5}));
        let errors = [
            Config::new(&m, "j").unit("threshold").map(|_| ()),
            Config::new(&m, "j")
                .choice("mode", &[("batch", 0), ("per_item", 1)], 0)
                .map(|_| ()),
            Config::new(&m, "j").boolean("strict", false).map(|_| ()),
            Config::new(&m, "j").strings("tools").map(|_| ()),
        ];
        let messages: Vec<String> = errors
            .into_iter()
            .map(|e| e.expect_err("invalid").to_string())
            .collect();
        assert_eq!(
            messages,
            [
                "config `threshold`: expected a number from 0 to 1, got 1.5",
                "config `mode`: unknown value `fast`; use one of: batch, per_item",
                "config `strict`: expected true or false, got \"yes\"",
                "config `tools[0]`: expected a string, got 1",
            ]
        );
        let mut c = Config::new(&m, "agentv-x");
        for key in ["threshold", "mode", "strict", "tools"] {
            c.value(key);
        }
        assert_eq!(
            c.finish().expect_err("unknown key").to_string(),
            "config `treshold`: agentv-x has no such setting; its settings are: mode, strict, threshold, tools"
        );
    }

    #[test]
    fn absent_and_null_keys_take_the_default() {
        let m = map(json!({"strict": null}));
        let mut c = Config::new(&m, "j");
        assert!(!c.boolean("strict", false).expect("default"));
        assert_eq!(c.unit("threshold").expect("absent"), None);
        assert_eq!(c.strings("tools").expect("absent"), None);
        c.finish().expect("every key known");
        let m = map(json!({"tools": "retrieve"}));
        assert_eq!(
            Config::new(&m, "j").strings("tools").expect("one string"),
            Some(vec!["retrieve".to_owned()])
        );
    }
}
