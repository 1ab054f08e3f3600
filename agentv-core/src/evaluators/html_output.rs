//! promptfoo's `is-html` and `contains-html` (`docs/promptfoo.md#is-html`).
//!
//! `is-html` parses the trimmed answer as an HTML document with a spec-conforming HTML5
//! parser (html5ever here, parse5 in promptfoo: both follow the WHATWG tree-construction rules,
//! so they build the same tree) and asks what promptfoo asks of it: that text is not left
//! directly in a `<body>` the author did not write, and that some element is a known HTML
//! element, a custom element (a `-` in its name), or an `<html>`/`<head>`/`<body>` written in
//! the answer. `contains-html` counts promptfoo's indicators (tags, entities, a doctype,
//! comments, attributes, common tag names) and wants two.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::{Arc, LazyLock};

use futures::future::BoxFuture;
use html5ever::interface::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::interface::{ElemName, ExpandedName};
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer};
use html5ever::tree_builder::TreeBuilder;
use html5ever::{Attribute, LocalName, Namespace, QualName};
use regex::Regex;

use super::promptfoo_check::{self, PfResult};
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&IS_HTML, &CONTAINS_HTML];

pub(crate) static IS_HTML: GraderEntry = GraderEntry {
    name: "is-html",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["is-html"],
    },
    doc: "Passes when the whole answer is an HTML document or fragment.",
    keys: &IS_KEYS,
    parse: parse_is,
};

pub(crate) static CONTAINS_HTML: GraderEntry = GraderEntry {
    name: "contains-html",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["contains-html"],
    },
    doc: "Passes when the answer holds HTML.",
    keys: &CONTAINS_KEYS,
    parse: parse_contains,
};

const IS_KEYS: KeyTable = KeyTable::new("is-html", "An HTML check.", &[]);
const CONTAINS_KEYS: KeyTable = KeyTable::new("contains-html", "A check for HTML inside the answer.", &[]);

/// promptfoo refuses answers longer than this many UTF-16 code units.
const MAX_INPUT: usize = 10 * 1024 * 1024;

fn parse_is(_: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(HtmlOutput {
        whole: true,
        inverse: promptfoo_check::inverse(cx),
    }))
}

fn parse_contains(_: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(HtmlOutput {
        whole: false,
        inverse: promptfoo_check::inverse(cx),
    }))
}

/// An `is-html` or `contains-html` check as configured.
#[derive(Debug, Clone, Copy)]
pub struct HtmlOutput {
    /// `is-html`; else `contains-html`.
    pub whole: bool,
    pub inverse: bool,
}

impl Grader for HtmlOutput {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { self.result(&candidate(ctx)).grade() })
    }
}

impl HtmlOutput {
    /// promptfoo's result for `output`.
    pub fn result(&self, output: &str) -> PfResult {
        if self.whole {
            let verdict = validate(output);
            PfResult::check(verdict.is_ok() != self.inverse, || {
                verdict.err().unwrap_or("Output is valid HTML").to_owned()
            })
        } else {
            let not = if self.inverse { "not " } else { "" };
            PfResult::check(contains_html(output) != self.inverse, || {
                format!("Expected output to {not}contain HTML content")
            })
        }
    }
}

fn utf16_len_over(text: &str, limit: usize) -> bool {
    text.len() > limit && text.encode_utf16().count() > limit
}

/// promptfoo's indicator patterns, each worth one point unless said otherwise.
struct Indicators {
    opening: Regex,
    closing: Regex,
    self_closing: Regex,
    entity: Regex,
    doctype: Regex,
    comment: Regex,
    attribute: Regex,
    common_tag: Regex,
}

static INDICATORS: LazyLock<Indicators> = LazyLock::new(|| {
    let re = |p: &str| Regex::new(p).expect("a valid pattern");
    Indicators {
        opening: re(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?>"),
        closing: re(r"</[a-zA-Z][a-zA-Z0-9-]*\s*>"),
        self_closing: re(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?/>"),
        entity: re(r"&(?:[a-zA-Z]+|#[0-9]+|#x[0-9a-fA-F]+);"),
        doctype: re(r"<!(?i-u:DOCTYPE)\s+(?i-u:html)"),
        comment: re(r"<!--[^-]*(?:-[^-]+)*-->"),
        attribute: re(r#"\s[a-zA-Z-]+=\s*["'][^"']*["']"#),
        common_tag: re(
            r"<(?i-u:html|head|body|div|span|p|a|img|h[1-6]|ul|ol|li|table|tr|td|th|form|input|button|script|style|link|meta|br|hr)(?-u:\b)",
        ),
    }
});

/// promptfoo's `containsHtml`: two indicator points make HTML.
pub fn contains_html(text: &str) -> bool {
    if utf16_len_over(text, MAX_INPUT) {
        return false;
    }
    let i = &*INDICATORS;
    let (opening, closing) = (i.opening.is_match(text), i.closing.is_match(text));
    let mut points = match (opening, closing) {
        (true, true) => 2,
        (false, false) => 0,
        _ => 1,
    };
    for (re, worth) in [
        (&i.self_closing, 1),
        (&i.entity, 1),
        (&i.doctype, 2),
        (&i.comment, 1),
        (&i.attribute, 1),
        (&i.common_tag, 2),
    ] {
        if re.is_match(text) {
            points += worth;
        }
    }
    points >= 2
}

/// The HTML elements promptfoo recognises (besides custom elements and the written wrappers).
const KNOWN_ELEMENTS: &[&str] = &[
    "html", "head", "title", "base", "link", "meta", "style", "body", "article", "section", "nav", "aside", "h1",
    "h2", "h3", "h4", "h5", "h6", "header", "footer", "address", "p", "hr", "pre", "blockquote", "ol", "ul", "li",
    "dl", "dt", "dd", "figure", "figcaption", "main", "div", "a", "em", "strong", "small", "s", "cite", "q", "dfn",
    "abbr", "ruby", "rt", "rp", "data", "time", "code", "var", "samp", "kbd", "sub", "sup", "i", "b", "u", "mark",
    "bdi", "bdo", "span", "br", "wbr", "img", "iframe", "embed", "object", "param", "picture", "source", "video",
    "audio", "track", "map", "area", "svg", "math", "script", "noscript", "canvas", "ins", "del", "table",
    "caption", "colgroup", "col", "tbody", "thead", "tfoot", "tr", "td", "th", "form", "label", "input", "button",
    "select", "datalist", "optgroup", "option", "textarea", "output", "progress", "meter", "fieldset", "legend",
    "details", "summary", "dialog", "menu", "slot", "template",
];

/// promptfoo's `validateHtml`: `Err` carries its reason.
pub fn validate(output: &str) -> Result<(), &'static str> {
    let trimmed = super::js::trim(output);
    if trimmed.is_empty() {
        return Err("Output is empty");
    }
    if utf16_len_over(trimmed, MAX_INPUT) {
        return Err("Output exceeds maximum size limit");
    }
    if trimmed
        .get(..5)
        .is_some_and(|head| head.eq_ignore_ascii_case("<?xml"))
    {
        return Err("Output appears to be XML, not HTML");
    }
    let tree = Tree::parse(trimmed);
    let lower = trimmed.to_lowercase();
    let body = tree.first_element(|n| n.name.as_deref() == Some("body"));
    if let Some(body) = body
        && !(written_wrapper(&lower, "body") && tree.nodes[body].written)
        && tree.has_top_level_text(body)
    {
        return Err("Output must be wrapped in HTML tags");
    }
    let recognised = |n: &Node| {
        let Some(name) = n.name.as_deref() else {
            return false;
        };
        let name = name.to_lowercase();
        if matches!(name.as_str(), "html" | "head" | "body") {
            return written_wrapper(&lower, &name) && n.written;
        }
        KNOWN_ELEMENTS.contains(&name.as_str()) || name.contains('-')
    };
    match tree.first_element(recognised) {
        Some(_) => Ok(()),
        None => Err("Output does not contain recognized HTML elements"),
    }
}

/// `<name` followed by white space, `>` or `/` somewhere in the (lower-cased) answer.
fn written_wrapper(lower: &str, name: &str) -> bool {
    let open = format!("<{name}");
    lower.match_indices(&open).any(|(at, _)| {
        lower[at + open.len()..]
            .chars()
            .next()
            .is_some_and(|c| c == '>' || c == '/' || super::js::is_whitespace(c))
    })
}

/// A node of the parsed document: an element (with its local name) or anything else.
#[derive(Debug, Default)]
struct Node {
    name: Option<String>,
    qual: Option<QualName>,
    children: Vec<usize>,
    parent: Option<usize>,
    /// Text content of a text node.
    text: Option<String>,
    /// An element made from a start tag the answer wrote (not one the parser implied).
    written: bool,
    template_contents: Option<usize>,
    integration_point: bool,
}

/// The parsed document as an arena; index 0 is the document.
#[derive(Debug)]
struct Tree {
    nodes: Vec<Node>,
}

impl Tree {
    fn parse(html: &str) -> Self {
        let sink = Sink {
            nodes: RefCell::new(vec![Node::default()]),
            current_start_tag: RefCell::new(None),
        };
        let watcher = Watcher {
            builder: TreeBuilder::new(sink, Default::default()),
        };
        let tokenizer = Tokenizer::new(watcher, Default::default());
        let input = BufferQueue::default();
        input.push_back(StrTendril::from_slice(html));
        let _ = tokenizer.feed(&input);
        tokenizer.end();
        let nodes = tokenizer.sink.builder.sink.nodes.take();
        Self { nodes }
    }

    /// The first element in document order (not inside templates) that `pick` accepts.
    fn first_element(&self, pick: impl Fn(&Node) -> bool) -> Option<usize> {
        let mut stack = vec![0];
        while let Some(at) = stack.pop() {
            let node = &self.nodes[at];
            if node.name.is_some() && pick(node) {
                return Some(at);
            }
            stack.extend(node.children.iter().rev());
        }
        None
    }

    fn has_top_level_text(&self, at: usize) -> bool {
        self.nodes[at].children.iter().any(|&c| {
            self.nodes[c]
                .text
                .as_deref()
                .is_some_and(|t| !super::js::trim(t).is_empty())
        })
    }
}

/// Passes every token to the tree builder, telling the sink which start tag is being handled:
/// an element the builder creates for it is written; one it creates for anything else is
/// implied (as parse5 leaves such elements without a source location).
struct Watcher {
    builder: TreeBuilder<usize, Sink>,
}

impl TokenSink for Watcher {
    type Handle = usize;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<usize> {
        let tag = match &token {
            Token::TagToken(Tag {
                kind: TagKind::StartTag,
                name,
                ..
            }) => Some(name.clone()),
            _ => None,
        };
        *self.builder.sink.current_start_tag.borrow_mut() = tag;
        self.builder.process_token(token, line_number)
    }

    fn end(&self) {
        *self.builder.sink.current_start_tag.borrow_mut() = None;
        self.builder.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.builder.adjusted_current_node_present_but_not_in_html_namespace()
    }
}

/// Builds the arena as the tree builder directs.
struct Sink {
    nodes: RefCell<Vec<Node>>,
    current_start_tag: RefCell<Option<LocalName>>,
}

impl Sink {
    fn add(&self, node: Node) -> usize {
        let mut nodes = self.nodes.borrow_mut();
        nodes.push(node);
        nodes.len() - 1
    }

    fn detach(&self, child: usize) {
        let mut nodes = self.nodes.borrow_mut();
        if let Some(parent) = nodes[child].parent.take() {
            nodes[parent].children.retain(|&c| c != child);
        }
    }

    /// Inserts `child` into `parent` at `index` (merging text into a text node before it).
    fn insert(&self, parent: usize, index: usize, child: NodeOrText<usize>) {
        let child = match child {
            NodeOrText::AppendNode(node) => node,
            NodeOrText::AppendText(text) => {
                let mut nodes = self.nodes.borrow_mut();
                let before = index.checked_sub(1).map(|i| nodes[parent].children[i]);
                if let Some(prev) = before
                    && let Some(t) = nodes[prev].text.as_mut()
                {
                    t.push_str(&text);
                    return;
                }
                drop(nodes);
                self.add(Node {
                    text: Some(text.to_string()),
                    ..Node::default()
                })
            }
        };
        self.detach(child);
        let mut nodes = self.nodes.borrow_mut();
        let index = index.min(nodes[parent].children.len());
        nodes[parent].children.insert(index, child);
        nodes[child].parent = Some(parent);
    }
}

/// An element's name, copied out of the arena (which lends no references).
#[derive(Debug)]
struct OwnedName(QualName);

impl ElemName for OwnedName {
    fn ns(&self) -> &Namespace {
        &self.0.ns
    }

    fn local_name(&self) -> &LocalName {
        &self.0.local
    }

    fn expanded(&self) -> ExpandedName<'_> {
        self.0.expanded()
    }
}

impl TreeSink for Sink {
    type Handle = usize;
    type Output = Self;
    type ElemName<'a> = OwnedName;

    fn finish(self) -> Self {
        self
    }

    fn parse_error(&self, _: Cow<'static, str>) {}

    fn get_document(&self) -> usize {
        0
    }

    fn elem_name<'a>(&'a self, target: &'a usize) -> OwnedName {
        OwnedName(
            self.nodes.borrow()[*target]
                .qual
                .clone()
                .unwrap_or_else(|| QualName::new(None, Namespace::from(""), LocalName::from(""))),
        )
    }

    fn create_element(&self, name: QualName, _: Vec<Attribute>, flags: ElementFlags) -> usize {
        let written = self.current_start_tag.borrow().as_ref() == Some(&name.local);
        let template_contents = flags.template.then(|| self.add(Node::default()));
        self.add(Node {
            name: Some(name.local.to_string()),
            qual: Some(name),
            written,
            template_contents,
            integration_point: flags.mathml_annotation_xml_integration_point,
            ..Node::default()
        })
    }

    fn create_comment(&self, _: StrTendril) -> usize {
        self.add(Node::default())
    }

    fn create_pi(&self, _: StrTendril, _: StrTendril) -> usize {
        self.add(Node::default())
    }

    fn append(&self, parent: &usize, child: NodeOrText<usize>) {
        let end = self.nodes.borrow()[*parent].children.len();
        self.insert(*parent, end, child);
    }

    fn append_based_on_parent_node(&self, element: &usize, prev: &usize, child: NodeOrText<usize>) {
        if self.nodes.borrow()[*element].parent.is_some() {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev, child);
        }
    }

    fn append_doctype_to_document(&self, _: StrTendril, _: StrTendril, _: StrTendril) {
        let doctype = self.add(Node::default());
        self.append(&0, NodeOrText::AppendNode(doctype));
    }

    fn get_template_contents(&self, target: &usize) -> usize {
        self.nodes.borrow()[*target].template_contents.unwrap_or(*target)
    }

    fn same_node(&self, x: &usize, y: &usize) -> bool {
        x == y
    }

    fn set_quirks_mode(&self, _: QuirksMode) {}

    fn append_before_sibling(&self, sibling: &usize, child: NodeOrText<usize>) {
        let found = {
            let nodes = self.nodes.borrow();
            nodes[*sibling]
                .parent
                .and_then(|p| Some((p, nodes[p].children.iter().position(|c| c == sibling)?)))
        };
        if let Some((parent, index)) = found {
            self.insert(parent, index, child);
        }
    }

    fn add_attrs_if_missing(&self, _: &usize, _: Vec<Attribute>) {}

    fn remove_from_parent(&self, target: &usize) {
        self.detach(*target);
    }

    fn reparent_children(&self, node: &usize, new_parent: &usize) {
        let children = std::mem::take(&mut self.nodes.borrow_mut()[*node].children);
        let mut nodes = self.nodes.borrow_mut();
        for child in children {
            nodes[child].parent = Some(*new_parent);
            nodes[*new_parent].children.push(child);
        }
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &usize) -> bool {
        self.nodes.borrow()[*handle].integration_point
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_check::testing::agrees_with_promptfoo;

    #[test]
    fn is_html_agrees_with_promptfoo() {
        agrees_with_promptfoo("is-html");
    }

    #[test]
    fn contains_html_agrees_with_promptfoo() {
        agrees_with_promptfoo("contains-html");
    }

    /// Expectations checked against promptfoo 0.121.20.
    #[test]
    fn is_html_tells_written_wrappers_from_implied_ones() {
        for (html, want) in [
            ("<html><body>text</body></html>", Ok(())),
            ("<head></head>text", Err("Output must be wrapped in HTML tags")),
            ("text<body>", Err("Output must be wrapped in HTML tags")),
            ("<head><title>x</title></head>", Ok(())),
            ("<html></html>", Ok(())),
            ("<template><p>x</p></template>", Ok(())),
            ("<my-widget/>", Ok(())),
            ("<svg><foreignObject/></svg>", Ok(())),
            ("<table>text<tr><td>x</td></tr></table>", Err("Output must be wrapped in HTML tags")),
            ("  <?XML version='1.0'?>", Err("Output appears to be XML, not HTML")),
            ("<frameset></frameset>", Err("Output does not contain recognized HTML elements")),
            ("<body><template>x</template></body>", Ok(())),
        ] {
            assert_eq!(validate(html), want, "{html}");
        }
    }

    /// Expectations checked against promptfoo 0.121.20.
    #[test]
    fn contains_html_needs_two_indicators() {
        for (text, want) in [
            ("<x>", false),
            ("<x></x>", true),
            ("<P>", true),
            ("<DIV", true),
            ("<!DocType   HTML", true),
            ("a &amp; <!-- c -->", true),
            ("&amp;", false),
            ("<x a='1'>", true),
            ("<divx>", false),
        ] {
            assert_eq!(contains_html(text), want, "{text}");
        }
    }
}
