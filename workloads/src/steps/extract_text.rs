//! `extract_text`: the main text of an HTML page, as the NLP pipeline's `decoded` step. The page
//! is parsed with html5ever (through `scraper`, a browser-grade parser that repairs broken
//! markup the way browsers do). The article is the first `<article>`, else `<main>` or
//! `role="main"`, else `<body>`. Within it, scripts, styles, navigation, headers, footers,
//! asides, forms and elements whose class or id marks boilerplate (ads, cookie banners, share
//! bars, related links, bylines, comments) are dropped; each paragraph-level block (p, h1-h6,
//! li, blockquote, pre, dt, dd, figcaption) becomes one paragraph with its whitespace collapsed,
//! and paragraphs are joined by a blank line. A page with no such blocks falls back to the
//! article's visible text as one paragraph; a page with no visible text at all yields an empty
//! string (documented, not an error: BPE then gives zero tokens).

use scraper::{ElementRef, Html, Node};
use serde::{Deserialize, Serialize};

use crate::error::StepError;
use crate::op::ParamDocs;
use crate::sample::{Field, FieldName, Sample};
use crate::step::{Step, StepContext};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InvalidUtf8 {
    /// Refuse the page, naming the byte offset.
    Error,
    /// Replace invalid sequences with U+FFFD.
    Replace,
}

impl crate::op::ParamKind for InvalidUtf8 {
    const KIND: &'static str = "error | replace";
}

#[derive(Debug, Deserialize, Serialize, ParamDocs)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// bytes field holding the page (UTF-8)
    #[serde(default = "super::default_data_field")]
    #[param(reads)]
    pub from: FieldName,
    /// text field to write; paragraphs separated by a blank line
    #[serde(default = "super::default_text_field")]
    #[param(writes)]
    pub to: FieldName,
    /// what to do with bytes that are not UTF-8
    #[serde(default = "default_invalid")]
    #[param(default = "error")]
    pub invalid_utf8: InvalidUtf8,
}

fn default_invalid() -> InvalidUtf8 {
    InvalidUtf8::Error
}

step_spec! { ExtractText, "extract_text", "main article text of an HTML page (html5ever parse; drops scripts, styles, navigation, boilerplate)" }

/// Elements whose whole subtree is never article text.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form",
    "button", "select", "textarea", "iframe", "svg", "canvas", "object", "embed", "head",
];

/// Paragraph-level blocks: each becomes one paragraph.
const BLOCKS: &[&str] = &[
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "blockquote",
    "pre",
    "dt",
    "dd",
    "figcaption",
];

/// Class or id words (split at `-`, `_` and spaces) that mark boilerplate.
const BOILERPLATE: &[&str] = &[
    "ad",
    "ads",
    "advert",
    "advertisement",
    "banner",
    "byline",
    "comment",
    "comments",
    "cookie",
    "cookies",
    "menu",
    "newsletter",
    "popup",
    "promo",
    "related",
    "share",
    "sidebar",
    "social",
    "sponsored",
];

fn is_boilerplate(el: &ElementRef) -> bool {
    let e = el.value();
    if SKIPPED.contains(&e.name()) || e.attr("hidden").is_some() {
        return true;
    }
    if e.attr("aria-hidden") == Some("true") {
        return true;
    }
    let marked = |value: &str| {
        value
            .split(|c: char| c == '-' || c == '_' || c.is_whitespace())
            .any(|w| BOILERPLATE.iter().any(|b| b.eq_ignore_ascii_case(w)))
    };
    e.classes().any(marked) || e.id().is_some_and(marked)
}

/// Elements besides the paragraph-level [`BLOCKS`] that separate words even without
/// whitespace around them.
const BREAKING: &[&str] = &[
    "br", "div", "section", "ul", "ol", "tr", "td", "th", "table", "hr",
];

fn space(out: &mut String) {
    if !out.is_empty() && !out.ends_with(' ') {
        out.push(' ');
    }
}

/// Appends the visible text under `el` (skipping boilerplate) to `out`, whitespace collapsed.
/// Work left while walking a tree without recursion (a page may nest tags 100,000 deep).
enum Visit<'a> {
    Node(ego_tree::NodeRef<'a, Node>),
    Space,
}

fn visible_text(el: ElementRef, out: &mut String) {
    // Children are pushed last first, so they are visited in document order.
    let mut stack: Vec<Visit> = el.children().rev().map(Visit::Node).collect();
    while let Some(visit) = stack.pop() {
        let node = match visit {
            Visit::Space => {
                space(out);
                continue;
            }
            Visit::Node(node) => node,
        };
        match node.value() {
            Node::Text(t) => {
                if t.starts_with(char::is_whitespace) {
                    space(out);
                }
                for (i, word) in t.split_whitespace().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(word);
                }
                if t.ends_with(char::is_whitespace) {
                    space(out);
                }
            }
            Node::Element(_) => {
                let Some(child) = ElementRef::wrap(node) else {
                    continue;
                };
                if is_boilerplate(&child) {
                    continue;
                }
                let name = child.value().name();
                if BREAKING.contains(&name) || BLOCKS.contains(&name) {
                    space(out);
                    stack.push(Visit::Space);
                }
                stack.extend(child.children().rev().map(Visit::Node));
            }
            _ => {}
        }
    }
}

fn blocks(el: ElementRef, paragraphs: &mut Vec<String>) {
    let mut stack: Vec<ElementRef> = el.children().rev().filter_map(ElementRef::wrap).collect();
    while let Some(child) = stack.pop() {
        if is_boilerplate(&child) {
            continue;
        }
        if BLOCKS.contains(&child.value().name()) {
            let mut text = String::new();
            visible_text(child, &mut text);
            let text = text.trim();
            if !text.is_empty() {
                paragraphs.push(text.to_string());
            }
        } else {
            stack.extend(child.children().rev().filter_map(ElementRef::wrap));
        }
    }
}

pub fn extract(html: &str) -> String {
    let document = Html::parse_document(html);
    let root = document.root_element();
    // One pass: the first element of each kind, in order of preference.
    let mut candidates: [Option<ElementRef>; 4] = [None; 4];
    for e in root.descendent_elements() {
        let kind = match (e.value().name(), e.value().attr("role")) {
            ("article", _) => 0,
            ("main", _) => 1,
            (_, Some("main")) => 2,
            ("body", _) => 3,
            _ => continue,
        };
        if candidates[kind].is_none() {
            candidates[kind] = Some(e);
            if kind == 0 {
                break;
            }
        }
    }
    let article = candidates.into_iter().flatten().next().unwrap_or(root);
    let mut paragraphs = Vec::new();
    blocks(article, &mut paragraphs);
    if paragraphs.is_empty() {
        let mut text = String::new();
        visible_text(article, &mut text);
        let text = text.trim();
        if !text.is_empty() {
            paragraphs.push(text.to_string());
        }
    }
    paragraphs.join("\n\n")
}

#[derive(Debug)]
pub struct ExtractText {
    params: Params,
}

impl ExtractText {
    pub fn new(params: Params) -> Result<ExtractText, String> {
        Ok(ExtractText { params })
    }
}

impl Step for ExtractText {
    fn apply(&self, mut sample: Sample, _ctx: &StepContext) -> Result<Sample, StepError> {
        let bytes = sample.take_bytes(&self.params.from)?;
        let page = match String::from_utf8(bytes) {
            Ok(page) => page,
            Err(e) => match self.params.invalid_utf8 {
                InvalidUtf8::Error => {
                    return Err(StepError::new(format!(
                        "the page is not valid UTF-8 (first invalid byte at offset {}); \
                         set invalid_utf8: replace to substitute U+FFFD",
                        e.utf8_error().valid_up_to()
                    )))
                }
                InvalidUtf8::Replace => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            },
        };
        sample.set(&self.params.to, Field::Text(extract(&page)));
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deeply_nested_pages_are_walked_without_recursion() {
        // 30,000 open tags: a recursive walk overflows a worker thread's 2 MB stack.
        let page = format!("<body>{}<p>deep <b>text</b></p>", "<div>".repeat(30_000));
        let text = std::thread::spawn(move || extract(&page)).join().unwrap();
        assert_eq!(text, "deep text");
    }

    const PAGE: &str = r##"<!DOCTYPE html><html><head><title>T | Site</title>
<script>var x = "<p>not text</p>";</script><style>.a { color: red }</style></head>
<body><nav><ul><li><a href="/">Home</a></li></ul></nav>
<div class="cookie-banner">We use cookies.</div>
<article><h1>The  Headline</h1><p class="byline">By Someone | 2015</p>
<p>First paragraph, with <b>bold</b> and <a href="#">a link</a>.</p>
<div class="ad"><script>show();</script>Advertisement</div>
<p>Second<br>line
   across   whitespace.</p><ul><li>An item</li></ul>
</article><aside><h3>Related</h3><ul><li><a href="/x">Other</a></li></ul></aside>
<footer><p>Copyright</p></footer></body></html>"##;

    #[test]
    fn keeps_the_article_and_drops_the_boilerplate() {
        assert_eq!(
            extract(PAGE),
            "The Headline\n\nFirst paragraph, with bold and a link.\n\nSecond line across whitespace.\n\nAn item"
        );
    }

    #[test]
    fn falls_back_to_body_text_and_to_nothing() {
        assert_eq!(
            extract("<html><body><div>Just <i>some</i> text</div></body></html>"),
            "Just some text"
        );
        assert_eq!(
            extract("<html><body><script>x()</script></body></html>"),
            ""
        );
        assert_eq!(extract("<div>a</div><div>b<i>c</i> d</div>"), "a bc d");
        assert_eq!(extract(""), "");
        // Unclosed paragraphs are closed as a browser would.
        assert_eq!(extract("<body><p>One<p>Two"), "One\n\nTwo");
    }

    #[test]
    fn invalid_utf8_is_an_error_or_replaced() {
        let ctx = StepContext::default();
        let input = || Sample::new(0).with("data", Field::Bytes(b"<p>caf\xe9</p>".to_vec()));
        let step = |invalid_utf8| {
            ExtractText::new(Params {
                from: "data".into(),
                to: "text".into(),
                invalid_utf8,
            })
            .unwrap()
        };
        let err = step(InvalidUtf8::Error).apply(input(), &ctx).unwrap_err();
        assert!(err.message.contains("offset 6"), "{}", err.message);
        let out = step(InvalidUtf8::Replace).apply(input(), &ctx).unwrap();
        assert_eq!(out.text("text").unwrap(), "caf\u{fffd}");
    }
}
