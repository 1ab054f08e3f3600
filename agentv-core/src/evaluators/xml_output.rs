//! promptfoo's `is-xml` and `contains-xml` (`docs/promptfoo.md#is-xml`): the whole answer is
//! well-formed XML (namespaces bound, entities defined, one root; a DTD internal subset is
//! refused), or the answer holds an XML element found as promptfoo finds them; either with the
//! `value`'s required element paths present (`root.child`, `root.@_attr`, `root.item.0`),
//! looked up as promptfoo looks them up in its parsed object.
//!
//! Well-formedness is checked by `roxmltree` where promptfoo uses `saxes`: both are strict
//! XML 1.0 parsers, so they accept and refuse the same documents, but a refusal's message
//! (after `XML parsing failed: `) is roxmltree's.

use std::sync::Arc;

use futures::future::BoxFuture;
use quick_xml::events::Event;

use super::promptfoo_check::{self, PfResult};
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind, NodeValue, describe};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&IS_XML, &CONTAINS_XML];

pub(crate) static IS_XML: GraderEntry = GraderEntry {
    name: "is-xml",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["is-xml"],
    },
    doc: "Passes when the answer is well-formed XML holding the element paths in `value`.",
    keys: &IS_KEYS,
    parse: parse_is,
};

pub(crate) static CONTAINS_XML: GraderEntry = GraderEntry {
    name: "contains-xml",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["contains-xml"],
    },
    doc: "Passes when the answer holds an XML element with the element paths in `value`.",
    keys: &CONTAINS_KEYS,
    parse: parse_contains,
};

const OWN: &[Key] = &[Key::new(
    "value",
    Kind::Any,
    "Required element paths: `root.child, root.@_attr`, a list of them, or `{requiredElements: [...]}`.",
)];
const IS_KEYS: KeyTable = KeyTable::new("is-xml", "An XML check.", &[OWN]);
const CONTAINS_KEYS: KeyTable = KeyTable::new("contains-xml", "A check for XML inside the answer.", &[OWN]);

fn parse_is(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    parse(f, cx, true)
}

fn parse_contains(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    parse(f, cx, false)
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>, whole: bool) -> Option<Arc<dyn Grader>> {
    let what = f.what().to_owned();
    let required = match f.take("value") {
        None => Vec::new(),
        Some(node) => match &node.value {
            NodeValue::Null => Vec::new(),
            NodeValue::Str(s) => s.split(',').map(|e| super::js::trim(e).to_owned()).collect(),
            NodeValue::Seq(items) => items.iter().map(|i| super::js::string_of(&i.to_json())).collect(),
            NodeValue::Map(_) => match node.get("requiredElements").and_then(|n| n.as_seq()) {
                Some(items) => items.iter().map(|i| super::js::string_of(&i.to_json())).collect(),
                None => Vec::new(),
            },
            _ => {
                cx.drop_grader(
                    node.pos,
                    format!("`value` of {what} must be element paths, found {}", describe(node)),
                    Some("write them as `value: root.child, root.other` or a list".to_owned()),
                );
                return None;
            }
        },
    };
    Some(Arc::new(XmlOutput {
        whole,
        required,
        inverse: promptfoo_check::inverse(cx),
    }))
}

/// An `is-xml` or `contains-xml` check as configured.
#[derive(Debug, Clone)]
pub struct XmlOutput {
    /// `is-xml`: the whole answer; else `contains-xml`.
    pub whole: bool,
    pub required: Vec<String>,
    pub inverse: bool,
}

impl Grader for XmlOutput {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let output = candidate(ctx);
            let verdict = if self.whole {
                validate(&output, &self.required)
            } else {
                contains(&output, &self.required)
            };
            let pass = verdict.valid != self.inverse;
            PfResult::check(pass, || verdict.reason).grade()
        })
    }
}

/// Whether the XML qualifies, and promptfoo's reason either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub valid: bool,
    pub reason: String,
    /// It parsed (with or without the required elements): `contains-xml` then skips the
    /// elements inside it.
    pub well_formed: bool,
}

fn verdict(valid: bool, reason: impl Into<String>, well_formed: bool) -> Verdict {
    Verdict {
        valid,
        reason: reason.into(),
        well_formed,
    }
}

/// promptfoo's `validateXml`: a strict parse of the whole text, then the required elements.
pub fn validate(xml: &str, required: &[String]) -> Verdict {
    if let Some(doctype) = doctype(xml) {
        if has_internal_subset(doctype) {
            return verdict(false, "DTD internal subsets are not supported by is-xml validation", false);
        }
        if !doctype_is_well_formed(doctype) {
            return verdict(false, "XML parsing failed: Malformed DOCTYPE declaration", false);
        }
    }
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    if let Err(e) = roxmltree::Document::parse_with_options(xml, options) {
        return verdict(false, format!("XML parsing failed: {e}"), false);
    }
    check_candidate(xml, required)
}

/// promptfoo's `containsXml`: candidates in its order, the first that parses with the required
/// elements wins; one inside an already parsed candidate is skipped.
pub fn contains(text: &str, required: &[String]) -> Verdict {
    let candidates = candidates(text);
    if candidates.is_empty() {
        return verdict(false, "No XML content found in the output", false);
    }
    let mut parsed: Vec<(usize, usize)> = Vec::new();
    for (start, end) in candidates {
        if parsed.iter().any(|&(s, e)| start >= s && end <= e) {
            continue;
        }
        let v = check_candidate(&text[start..end], required);
        if v.valid {
            return v;
        }
        if v.well_formed {
            parsed.push((start, end));
        }
    }
    verdict(false, "No valid XML content found matching the requirements", false)
}

/// promptfoo's `validateXmlCandidate`: a lenient parse, then each required path looked up.
fn check_candidate(xml: &str, required: &[String]) -> Verdict {
    let root = match lenient_tree(xml) {
        Ok(root) => root,
        Err(e) => return verdict(false, format!("XML parsing failed: {e}"), false),
    };
    let missing: Vec<&str> = required
        .iter()
        .filter(|path| !has_path(&root, path))
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        verdict(true, "XML is valid and contains all required elements", true)
    } else {
        verdict(false, format!("XML is missing required elements: {}", missing.join(", ")), true)
    }
}

/// An element as promptfoo's parser sees it: its attributes, child elements and whether it
/// has text. The document is an element named "" holding the top-level ones (and `?xml`).
#[derive(Debug, Default)]
struct Elem {
    name: String,
    attrs: Vec<String>,
    children: Vec<Elem>,
    text: bool,
}

/// Builds the tree leniently (unknown entities, unbound prefixes, repeated attributes are
/// fine), as promptfoo's object parser does.
fn lenient_tree(xml: &str) -> Result<Elem, String> {
    let mut reader = quick_xml::Reader::from_str(xml);
    reader.config_mut().trim_text(true);
    reader.config_mut().check_end_names = false;
    let mut stack: Vec<Elem> = vec![Elem::default()];
    loop {
        let event = reader.read_event().map_err(|e| e.to_string())?;
        match event {
            Event::Start(e) | Event::Empty(e) if matches!(event, Event::Empty(_)) => {
                let elem = element(&e);
                if let Some(top) = stack.last_mut() {
                    top.children.push(elem);
                }
            }
            Event::Start(e) => stack.push(element(&e)),
            Event::End(_) => {
                if stack.len() > 1
                    && let Some(done) = stack.pop()
                    && let Some(top) = stack.last_mut()
                {
                    top.children.push(done);
                }
            }
            Event::Text(t) if !t.is_empty() => mark_text(&mut stack),
            Event::CData(c) if !c.is_empty() => mark_text(&mut stack),
            Event::GeneralRef(_) => mark_text(&mut stack),
            Event::Decl(d) => {
                let mut decl = Elem {
                    name: "?xml".to_owned(),
                    ..Elem::default()
                };
                decl.attrs.push("version".to_owned());
                if d.encoding().is_some() {
                    decl.attrs.push("encoding".to_owned());
                }
                if d.standalone().is_some() {
                    decl.attrs.push("standalone".to_owned());
                }
                if let Some(top) = stack.first_mut() {
                    top.children.push(decl);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    while stack.len() > 1 {
        if let Some(done) = stack.pop()
            && let Some(top) = stack.last_mut()
        {
            top.children.push(done);
        }
    }
    stack.pop().ok_or_else(|| "empty document".to_owned())
}

fn mark_text(stack: &mut [Elem]) {
    if stack.len() > 1
        && let Some(top) = stack.last_mut()
    {
        top.text = true;
    }
}

fn element(e: &quick_xml::events::BytesStart<'_>) -> Elem {
    Elem {
        name: e.name().0.to_owned(),
        attrs: e
            .attributes()
            .with_checks(false)
            .filter_map(Result::ok)
            .map(|a| a.key.0.to_owned())
            .collect(),
        ..Elem::default()
    }
}

/// What a path segment reaches: a value without keys, one element as an object, or several
/// elements of one name as a list.
enum Reached<'t> {
    Leaf,
    Object(&'t Elem),
    List(Vec<&'t Elem>),
}

fn value_of(e: &Elem) -> Reached<'_> {
    if e.attrs.is_empty() && e.children.is_empty() {
        Reached::Leaf
    } else {
        Reached::Object(e)
    }
}

/// promptfoo's `hasElementPath` on its parsed object: `a.b` steps into children, `@_x` is an
/// attribute, `#text` the text of an element that also has attributes or children, a number
/// indexes a repeated element.
fn has_path(root: &Elem, path: &str) -> bool {
    let mut current = Reached::Object(root);
    for key in path.split('.') {
        current = match current {
            Reached::Leaf => return false,
            Reached::Object(e) => {
                if let Some(attr) = key.strip_prefix("@_")
                    && e.attrs.iter().any(|a| a == attr)
                {
                    Reached::Leaf
                } else if key == "#text" && e.text {
                    Reached::Leaf
                } else {
                    let named: Vec<&Elem> = e.children.iter().filter(|c| c.name == key).collect();
                    match named.as_slice() {
                        [] => return false,
                        [one] => value_of(one),
                        _ => Reached::List(named),
                    }
                }
            }
            Reached::List(items) => match key.parse::<usize>() {
                Ok(i) if i.to_string() == key && i < items.len() => value_of(items[i]),
                _ => return false,
            },
        };
    }
    true
}

/// The text of the first `<!DOCTYPE …>` (after the keyword, before its `>`).
fn doctype(xml: &str) -> Option<&str> {
    let start = xml.find("<!DOCTYPE")?;
    let end = declaration_end(xml, start);
    xml.get(start + 9..end)
}

/// promptfoo's `findDeclarationEnd` for a `<!…>`: the `>` outside quotes and brackets (the end
/// of the text when there is none).
fn declaration_end(text: &str, start: usize) -> usize {
    let bytes = text.as_bytes();
    let (mut quote, mut depth) = (None, 0usize);
    for (i, &b) in bytes.iter().enumerate().skip(start + 2) {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'[') => depth += 1,
            (None, b']') if depth > 0 => depth -= 1,
            (None, b'>') if depth == 0 => return i,
            _ => {}
        }
    }
    text.len()
}

fn has_internal_subset(doctype: &str) -> bool {
    let mut quote = None;
    for c in doctype.chars() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => return true,
            _ => {}
        }
    }
    false
}

/// promptfoo's `isWellFormedDoctype`: ` name`, then optionally `SYSTEM "id"` or
/// `PUBLIC "pubid" "id"`.
fn doctype_is_well_formed(doctype: &str) -> bool {
    let skip = |s: &str| s.trim_start_matches([' ', '\t', '\r', '\n']).len();
    let rest = doctype.trim_start_matches([' ', '\t', '\r', '\n']);
    if rest.len() == doctype.len() {
        return false;
    }
    let name_len = xml_name_len(rest);
    if name_len == 0 {
        return false;
    }
    let after = &rest[name_len..];
    let id = after.trim_start_matches([' ', '\t', '\r', '\n']);
    if id.is_empty() {
        return true;
    }
    if id.len() == after.len() {
        return false;
    }
    let system_literal = |s: &str| -> bool {
        let lit = s.trim_start_matches([' ', '\t', '\r', '\n']);
        if lit.len() == s.len() {
            return false;
        }
        match quoted(lit) {
            Some((value, tail)) => !value.contains('#') && skip(tail) == 0,
            None => false,
        }
    };
    if let Some(tail) = id.strip_prefix("SYSTEM") {
        return system_literal(tail);
    }
    if let Some(tail) = id.strip_prefix("PUBLIC") {
        let lit = tail.trim_start_matches([' ', '\t', '\r', '\n']);
        if lit.len() == tail.len() {
            return false;
        }
        let Some((public, tail)) = quoted(lit) else {
            return false;
        };
        let public_ok = public
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " \r\n'()+,./:=?;!*#@$_%-".contains(c));
        return public_ok && system_literal(tail);
    }
    false
}

/// A quoted literal at the start of `s`: its value and what follows.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let q = s.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let close = s[1..].find(q)? + 1;
    Some((&s[1..close], &s[close + 1..]))
}

/// The byte length of the XML name at the start of `s` (0 when there is none).
fn xml_name_len(s: &str) -> usize {
    let mut len = 0;
    for (i, c) in s.char_indices() {
        let ok = if i == 0 { is_name_start(c) } else { is_name_char(c) };
        if !ok {
            break;
        }
        len = i + c.len_utf8();
    }
    len
}

fn is_name_start(c: char) -> bool {
    matches!(c, ':' | '_' | 'A'..='Z' | 'a'..='z' | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}'
        | '\u{F8}'..='\u{2FF}' | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}' | '\u{200C}'..='\u{200D}'
        | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}' | '\u{3001}'..='\u{D7FF}'
        | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}' | '\u{10000}'..='\u{EFFFF}')
}

fn is_name_char(c: char) -> bool {
    is_name_start(c) || matches!(c, '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}

/// A tag found by promptfoo's scanner.
enum Tag<'t> {
    Declaration { end: usize },
    Closing { end: usize, name: &'t str },
    Opening { end: usize, name: &'t str, self_closing: bool },
}

/// promptfoo's `extractXmlCandidates`: elements whose tags balance, as byte ranges, in
/// promptfoo's order (runs of sibling elements first, then outermost elements by position).
fn candidates(text: &str) -> Vec<(usize, usize)> {
    struct Found {
        start: usize,
        end: usize,
        parent: Option<usize>,
    }
    let mut stack: Vec<(&str, usize)> = Vec::new();
    let mut found: Vec<Found> = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text.as_bytes()[i] != b'<' {
            i += 1;
            continue;
        }
        let Some(tag) = read_tag(text, i) else {
            i += 1;
            continue;
        };
        let parent = stack.last().map(|&(_, s)| s);
        let end = match tag {
            Tag::Declaration { end } => end,
            Tag::Opening { end, self_closing: true, .. } => {
                found.push(Found { start: i, end: end + 1, parent });
                end
            }
            Tag::Opening { end, name, .. } => {
                stack.push((name, i));
                end
            }
            Tag::Closing { end, name } => {
                match stack.last() {
                    Some(&(open, start)) if open == name => {
                        stack.pop();
                        let parent = stack.last().map(|&(_, s)| s);
                        found.push(Found { start, end: end + 1, parent });
                    }
                    _ => stack.clear(),
                }
                end
            }
        };
        i = end + 1;
    }
    let starts: Vec<usize> = found.iter().map(|f| f.start).collect();
    let mut ordered: Vec<(usize, usize)> = Vec::new();
    let add = |range: (usize, usize), ordered: &mut Vec<(usize, usize)>| {
        if !ordered.contains(&range) {
            ordered.push(range);
        }
    };
    let mut parents: Vec<Option<usize>> = Vec::new();
    for f in &found {
        if !parents.contains(&f.parent) {
            parents.push(f.parent);
        }
    }
    for parent in &parents {
        if parent.is_some_and(|p| starts.contains(&p)) {
            continue;
        }
        let mut siblings: Vec<&Found> = found.iter().filter(|f| f.parent == *parent).collect();
        if siblings.len() <= 1 {
            continue;
        }
        siblings.sort_by_key(|f| (f.start, f.end));
        if let (Some(first), Some(last)) = (siblings.first(), siblings.last()) {
            add((first.start, last.end), &mut ordered);
        }
    }
    let mut maximal: Vec<&Found> = found
        .iter()
        .filter(|f| f.parent.is_none_or(|p| !starts.contains(&p)))
        .collect();
    maximal.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    for f in maximal {
        add((f.start, f.end), &mut ordered);
    }
    ordered
}

/// promptfoo's `readXmlTag` at the `<` at `start`.
fn read_tag(text: &str, start: usize) -> Option<Tag<'_>> {
    let rest = &text[start + 1..];
    match rest.as_bytes().first()? {
        b'!' => Some(Tag::Declaration {
            end: if rest.starts_with("!--") {
                delimited_end(text, start + 4, "-->")
            } else if rest.starts_with("![CDATA[") {
                delimited_end(text, start + 9, "]]>")
            } else {
                declaration_end(text, start)
            },
        }),
        b'?' => Some(Tag::Declaration {
            end: delimited_end(text, start + 2, "?>"),
        }),
        b'/' => {
            let name_len = xml_name_len(&rest[1..]);
            if name_len == 0 {
                return None;
            }
            let end = tag_end(text, start)?;
            Some(Tag::Closing {
                end,
                name: &rest[1..1 + name_len],
            })
        }
        _ => {
            let name_len = xml_name_len(rest);
            if name_len == 0 {
                return None;
            }
            let end = tag_end(text, start)?;
            let inner = text[start..end].trim_end_matches(|c: char| super::js::is_whitespace(c));
            Some(Tag::Opening {
                end,
                name: &rest[..name_len],
                self_closing: inner.ends_with('/'),
            })
        }
    }
}

/// The index of the last character of `delimiter` after `from`, else the text's last index.
fn delimited_end(text: &str, from: usize, delimiter: &str) -> usize {
    match text.get(from..).and_then(|t| t.find(delimiter)) {
        Some(at) => from + at + delimiter.len() - 1,
        None => text.len().saturating_sub(1),
    }
}

/// The `>` closing the tag at `start` (outside quotes); `None` at a `<` or the end.
fn tag_end(text: &str, start: usize) -> Option<usize> {
    let mut quote = None;
    for (i, b) in text.bytes().enumerate().skip(start + 1) {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'<') => return None,
            (None, b'>') => return Some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_check::testing::agrees_with_promptfoo;

    #[test]
    fn is_xml_agrees_with_promptfoo() {
        agrees_with_promptfoo("is-xml");
    }

    #[test]
    fn contains_xml_agrees_with_promptfoo() {
        agrees_with_promptfoo("contains-xml");
    }

    #[test]
    fn candidates_follow_promptfoo_order() {
        let text = "a <x>1</x> b <y><z/></y> <w>";
        let got: Vec<&str> = candidates(text).into_iter().map(|(s, e)| &text[s..e]).collect();
        assert_eq!(got, ["<x>1</x> b <y><z/></y>", "<x>1</x>", "<y><z/></y>"]);
    }
}
