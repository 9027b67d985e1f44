//! Text extraction: a help page (HTML, Mallard, man page, Markdown, plain text, the reference
//! system's JSON guidance) reduced to its title, headings, index keywords and visible body
//! text. Every input is bounded: the caller reads at most [`MAX_FILE_BYTES`], and every field
//! is clipped here.

use serde::Deserialize;

/// Most bytes read from one file (a larger file is read up to here).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Most characters of a page's body text kept.
pub const MAX_BODY_CHARS: usize = 64 * 1024;
/// Most characters of a title.
pub const MAX_TITLE_CHARS: usize = 300;
/// Most characters of the headings or the keywords of one page.
pub const MAX_FIELD_CHARS: usize = 8 * 1024;
/// Most nesting depth walked in an HTML page (deeper content is left out).
const MAX_DEPTH: usize = 256;

/// A page reduced to what the store indexes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// The page's title.
    pub title: String,
    /// Its headings, one per line.
    pub headings: String,
    /// Its index keywords (LibreOffice's index entries, a Mallard page's description, a man
    /// page's name line), one per line.
    pub keywords: String,
    /// The visible text.
    pub body: String,
}

impl Page {
    /// The page with every field clipped to its bound and whitespace collapsed.
    fn bounded(self) -> Page {
        Page {
            title: clip(&collapse(&self.title), MAX_TITLE_CHARS),
            headings: clip(&self.headings, MAX_FIELD_CHARS),
            keywords: clip(&self.keywords, MAX_FIELD_CHARS),
            body: clip(&collapse(&self.body), MAX_BODY_CHARS),
        }
    }
}

/// The formats the extractor reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// HTML or XHTML (LibreOffice's and GIMP's help, a person's pages).
    Html,
    /// A Mallard `.page` (GNOME help).
    Mallard,
    /// A man page in roff.
    Man,
    /// Markdown.
    Markdown,
    /// Plain text.
    Text,
}

impl Format {
    /// The format of a file by its name (`None`: not a document the store reads).
    pub fn of_path(path: &std::path::Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        match ext {
            "html" | "htm" | "xhtml" | "xhp" => Some(Format::Html),
            "page" => Some(Format::Mallard),
            "md" | "markdown" => Some(Format::Markdown),
            "txt" | "text" | "rst" => Some(Format::Text),
            e if e.len() == 1 && e.chars().all(|c| c.is_ascii_digit()) => Some(Format::Man),
            _ => None,
        }
    }
}

/// Extract `text` in `format`; `fallback_title` names a page that has no title of its own.
pub fn extract(format: Format, text: &str, fallback_title: &str) -> Page {
    let mut page = match format {
        Format::Html => html(text),
        Format::Mallard => mallard(text),
        Format::Man => man(text),
        Format::Markdown => markdown(text),
        Format::Text => Page {
            body: text.to_string(),
            ..Page::default()
        },
    };
    if page.title.trim().is_empty() {
        page.title = fallback_title.to_string();
    }
    page.bounded()
}

// ---------------------------------------------------------------------------------------------
// HTML
// ---------------------------------------------------------------------------------------------

/// Elements whose content is not part of the page's text (scripts, navigation, chrome).
fn skipped_tag(name: &str) -> bool {
    matches!(
        name,
        "script"
            | "style"
            | "noscript"
            | "header"
            | "footer"
            | "aside"
            | "nav"
            | "template"
            | "svg"
    )
}

/// Elements that separate words (a space is put around their text).
fn block_tag(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "li"
            | "br"
            | "tr"
            | "td"
            | "th"
            | "dt"
            | "dd"
            | "pre"
            | "table"
            | "ul"
            | "ol"
            | "dl"
            | "section"
            | "article"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "title"
            | "blockquote"
            | "hr"
            | "body"
            | "main"
            | "figure"
            | "figcaption"
            | "caption"
    )
}

/// Navigation blocks by class (GIMP's DocBook pages) or id (LibreOffice's).
fn skipped_block(tag: &tl::HTMLTag<'_>) -> bool {
    let id_skipped = tag
        .attributes()
        .id()
        .map(|id| {
            matches!(
                &*id.as_utf8_str(),
                "DEBUG" | "SearchFrame" | "DonationFrame"
            )
        })
        .unwrap_or(false);
    let class_skipped = tag
        .attributes()
        .class_iter()
        .map(|mut it| it.any(|c| matches!(c, "navheader" | "navfooter" | "toc")))
        .unwrap_or(false);
    id_skipped || class_skipped
}

/// One step of the page walk.
enum Walk {
    /// Visit a node at a depth.
    Enter(tl::NodeHandle, usize),
    /// Leave an element: close a heading, a title or a "To access this command" block, or
    /// the Mac-only text in it; separate words.
    Leave {
        heading: bool,
        title: bool,
        access: bool,
        mac: bool,
    },
}

/// Title, headings, index keywords and visible text of an HTML page.
pub fn html(text: &str) -> Page {
    let text = after_prolog(text);
    let Ok(dom) = tl::parse(text, tl::ParserOptions::default()) else {
        return Page {
            body: text.to_string(),
            ..Page::default()
        };
    };
    let parser = dom.parser();
    let mut reader = HtmlReader {
        stack: dom
            .children()
            .iter()
            .rev()
            .map(|h| Walk::Enter(*h, 0))
            .collect(),
        ..HtmlReader::default()
    };
    while let Some(step) = reader.stack.pop() {
        match step {
            Walk::Leave {
                heading,
                title,
                access,
                mac,
            } => reader.leave(heading, title, access, mac),
            Walk::Enter(handle, depth) => match handle.get(parser) {
                Some(tl::Node::Raw(raw)) => reader.text(&raw.as_utf8_str()),
                Some(tl::Node::Tag(tag)) => reader.enter(tag, depth),
                Some(tl::Node::Comment(_)) | None => {}
            },
        }
    }
    reader.finish()
}

/// The page after its prolog: the XML declaration (`<?xml …?>`), the document type
/// (`<!DOCTYPE …>`) and comments before the first element. After an XML declaration the HTML
/// parser read the document type as text: every GIMP page's body began with `PUBLIC
/// "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://…/xhtml1-transitional.dtd">`, some 40
/// of the 128 tokens the model reads of a page's start.
fn after_prolog(text: &str) -> &str {
    let mut rest = text.trim_start_matches('\u{feff}');
    loop {
        let trimmed = rest.trim_start();
        let end = if trimmed.starts_with("<?") {
            trimmed.find("?>").map(|i| i + 2)
        } else if trimmed.starts_with("<!--") {
            trimmed.find("-->").map(|i| i + 3)
        } else if trimmed
            .get(..9)
            .is_some_and(|s| s.eq_ignore_ascii_case("<!doctype"))
        {
            trimmed.find('>').map(|i| i + 1)
        } else {
            None
        };
        match end {
            Some(end) => rest = &trimmed[end..],
            None => return rest,
        }
    }
}

/// What the walk of an HTML page has read so far.
#[derive(Default)]
struct HtmlReader {
    page: Page,
    keywords: Vec<String>,
    headings: Vec<String>,
    /// The text of the heading being read, while inside one.
    heading: Option<String>,
    /// The text of the `<title>` being read, while inside it.
    title: Option<String>,
    /// The nodes still to visit and the elements still to leave, the next one last.
    stack: Vec<Walk>,
    /// The title of the section the page is part of (`<link rel="up" title=…>`).
    up: Option<String>,
    /// The title of the manual's first page (`<link rel="home" title=…>`).
    home: Option<String>,
    /// The text of LibreOffice's "To access this command…" block (`howtogetbody`), its
    /// paragraphs one a line, while and after it is read (the first one only).
    access: Option<String>,
    /// Whether the access block is being read.
    in_access: bool,
    /// How many Mac-only elements (`class="MAC"`: "LibreOffice - Preferences" beside
    /// "Tools - Options") the walk is inside.
    mac: usize,
}

impl HtmlReader {
    /// Text: into the heading or title being read, and (but a title's) into the body while it
    /// is under its bound.
    fn text(&mut self, raw: &str) {
        let t = decode_entities(raw);
        if let Some(h) = self.heading.as_mut() {
            h.push_str(&t);
        }
        if let Some(h) = self.title.as_mut() {
            h.push_str(&t);
            return; // the <title> is not body text
        }
        if self.in_access && self.mac == 0 {
            if let Some(a) = self
                .access
                .as_mut()
                .filter(|a| a.len() < MAX_TITLE_CHARS * 4)
            {
                a.push_str(&t);
            }
        }
        if self.page.body.len() < MAX_BODY_CHARS * 4 {
            self.page.body.push_str(&t);
        }
    }

    /// An element: its keywords (`<meta>`), or its children to visit unless it is chrome or
    /// too deep, noting a heading or the title it opens.
    fn enter(&mut self, tag: &tl::HTMLTag<'_>, depth: usize) {
        let name = tag.name().as_utf8_str().to_ascii_lowercase();
        if name == "meta" {
            if let Some(k) = meta_keywords(tag) {
                self.keywords.extend(k);
            }
            return;
        }
        if name == "link" {
            if let Some((rel, title)) = link_title(tag) {
                match rel.as_str() {
                    "up" => self.up = Some(title),
                    "home" => self.home = Some(title),
                    _ => {}
                }
            }
            return;
        }
        if skipped_tag(&name) || skipped_block(tag) || depth >= MAX_DEPTH {
            return;
        }
        let is_heading = matches!(name.as_str(), "h1" | "h2" | "h3" | "h4" | "h5" | "h6");
        let is_title = name == "title" && self.title.is_none();
        let has_class = |c: &str| {
            tag.attributes()
                .class_iter()
                .is_some_and(|mut it| it.any(|k| k == c))
        };
        let is_access = self.access.is_none() && has_class("howtogetbody");
        if is_access {
            self.access = Some(String::new());
            self.in_access = true;
        }
        let is_mac = has_class("MAC");
        if is_mac {
            self.mac += 1;
        }
        if self.in_access && block_tag(&name) {
            if let Some(a) = self.access.as_mut() {
                a.push('\n');
            }
        }
        if is_heading && self.heading.is_none() {
            self.heading = Some(String::new());
        }
        if is_title {
            self.title = Some(String::new());
        }
        if block_tag(&name) {
            self.page.body.push(' ');
        }
        self.stack.push(Walk::Leave {
            heading: is_heading,
            title: is_title,
            access: is_access,
            mac: is_mac,
        });
        for child in tag.children().top().as_slice().iter().rev() {
            self.stack.push(Walk::Enter(*child, depth + 1));
        }
    }

    /// Leaving an element: a heading or the title it opened is complete; words are separated.
    fn leave(&mut self, heading: bool, title: bool, access: bool, mac: bool) {
        if access {
            self.in_access = false;
        }
        if mac {
            self.mac = self.mac.saturating_sub(1);
        }
        if self.in_access {
            if let Some(a) = self.access.as_mut() {
                a.push(' ');
            }
        }
        if heading {
            if let Some(text) = self.heading.take() {
                let text = strip_numbering(&collapse(&text));
                if !text.is_empty() {
                    self.headings.push(text);
                }
            }
        }
        if title {
            if let Some(text) = self.title.take() {
                if self.page.title.is_empty() {
                    self.page.title = strip_numbering(&collapse(&text));
                }
            }
        }
        self.page.body.push(' ');
    }

    /// The page, with its keywords and headings one per line; the section it is part of
    /// (its `<link rel="up">`, unless that is the whole manual) is its first heading. A
    /// LibreOffice page titled by a tab of a dialog or an entry of a submenu ("General",
    /// "Options", "Page", "Hide") gets the menu path of its dialog after its title ("Page
    /// (Slide - Slide Properties)", [`dialog_of`]): 13 pages are titled "General" and 12
    /// "Options", and neither the lexical nor the model's ranking could tell which is which.
    fn finish(mut self) -> Page {
        self.keywords.dedup();
        self.page.keywords = self.keywords.join("\n");
        if let Some(up) = self.up.map(|u| strip_label(&collapse(&u))) {
            let home = self.home.map(|h| strip_label(&collapse(&h)));
            if !up.is_empty() && home.as_deref() != Some(up.as_str()) {
                self.headings.insert(0, up);
            }
        }
        self.page.headings = self.headings.join("\n");
        if let Some(dialog) = self
            .access
            .as_deref()
            .and_then(first_access_path)
            .and_then(|path| dialog_of(&self.page.title, &path))
        {
            self.page.title = format!("{} ({dialog})", self.page.title.trim());
        }
        self.page
    }
}

/// The first way to a LibreOffice command its "To access this command…" block gives
/// ("Choose Format - Character - Font Effects tab"): its first line, to its first full stop.
fn first_access_path(block: &str) -> Option<String> {
    let line = block
        .lines()
        .map(collapse)
        .find(|l| !l.is_empty() && l.contains(" - "))?;
    let end = line.find(". ").unwrap_or(line.len());
    let path = line[..end].trim_end_matches(['.', ' ']).to_string();
    (!path.is_empty()).then(|| clip(&path, MAX_TITLE_CHARS))
}

/// The dialog (its menu path) a page titled by one of its tabs or sections belongs to:
/// `title` "General" and `path` "Open a text document, choose Tools - Options - LibreOffice
/// Writer - General" give "Tools - Options - LibreOffice Writer"; "Font Effects" and "Choose
/// Format - Character - Font Effects tab" give "Format - Character"; "Page" and "Choose
/// Slide - Slide Properties and then click the Page tab" give "Slide - Slide Properties".
/// `None` when the path does not end at the title or has nothing before it: a command such
/// as "Insert - Duplicate Slide" is named by its title already, so a path gets a qualifier
/// only when it goes through a dialog (a tab, or two steps before the title).
fn dialog_of(title: &str, path: &str) -> Option<String> {
    let title = title.trim();
    if title.is_empty() {
        return None;
    }
    // ASCII case folding keeps every byte where it was
    let lower = path.to_ascii_lowercase();
    let t = title.to_ascii_lowercase();
    // where the path names the title: at its end, before a word such as "tab"
    let at = lower.rfind(&t)?;
    let after = lower[at + t.len()..].trim();
    let after = after.trim_start_matches(['.', ',', ' ']);
    if !matches!(
        after,
        "" | "tab" | "tab page" | "page" | "label" | "section" | "area"
    ) {
        return None;
    }
    let mut before = path.get(..at)?;
    // from the last "choose" on ("Open a text document, choose …")
    if let Some(i) = before.to_ascii_lowercase().rfind("choose ") {
        before = &before[i + "choose ".len()..];
    }
    let before = before.trim();
    let before = [
        "and then click the",
        "then click the",
        "and click the",
        "click the",
        "-",
    ]
    .iter()
    .fold(before, |b, tail| b.strip_suffix(tail).unwrap_or(b).trim());
    let steps: Vec<&str> = before
        .split(" - ")
        .map(|s| s.trim().trim_end_matches(',').trim())
        .filter(|s| !s.is_empty())
        .collect();
    // one step is a menu (the title is its command); two are a menu and a dialog
    let tabbed = after.starts_with("tab") || after == "label";
    if steps.is_empty() || (steps.len() < 2 && !tabbed) {
        return None;
    }
    if steps.iter().any(|s| s.chars().count() > 40) {
        return None; // a sentence, not a menu path
    }
    Some(steps.join(" - "))
}

/// The index keywords a `<meta>` carries (`name="keywords"` or LibreOffice's
/// `itemprop="keywords"`).
fn meta_keywords(tag: &tl::HTMLTag<'_>) -> Option<Vec<String>> {
    let attrs = tag.attributes();
    let is_keywords = ["name", "itemprop"].iter().any(|a| {
        attrs
            .get(*a)
            .flatten()
            .map(|v| v.as_utf8_str().eq_ignore_ascii_case("keywords"))
            .unwrap_or(false)
    });
    if !is_keywords {
        return None;
    }
    let content = attrs.get("content").flatten()?;
    let k = collapse(&decode_entities(&content.as_utf8_str()));
    (!k.is_empty()).then(|| vec![k])
}

/// The relation and title of a `<link>` that has both (`rel="up" title="3. Paint Tools"`).
/// GIMP's pages name only themselves ("Heal", "Clear", "Text"): the section they are part of
/// ("Paint Tools", "The “Edit” Menu") says what kind of thing they are and where it is.
fn link_title(tag: &tl::HTMLTag<'_>) -> Option<(String, String)> {
    let attrs = tag.attributes();
    let rel = attrs
        .get("rel")
        .flatten()?
        .as_utf8_str()
        .to_ascii_lowercase();
    let title = decode_entities(&attrs.get("title").flatten()?.as_utf8_str());
    Some((rel, title))
}

/// A DocBook label taken off a title: a section number ("3. Paint Tools" → "Paint Tools") or
/// a chapter's, part's or appendix's ("Chapter 17. Filters" → "Filters").
fn strip_label(s: &str) -> String {
    let s = s.trim();
    let mut words = s.splitn(3, ' ');
    if let (Some(kind), Some(label), Some(rest)) = (words.next(), words.next(), words.next()) {
        if matches!(kind, "Chapter" | "Part" | "Appendix") && label.ends_with('.') {
            return rest.trim().to_string();
        }
    }
    strip_numbering(s)
}

/// A DocBook section number taken off a title ("7.34. Add Alpha Channel" → "Add Alpha Channel").
fn strip_numbering(s: &str) -> String {
    let trimmed = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if trimmed.len() != s.len() && trimmed.starts_with(' ') {
        trimmed.trim().to_string()
    } else {
        s.trim().to_string()
    }
}

/// HTML character references decoded (the common named ones and every numeric one).
pub fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest[1..]
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '#')
            .map(|e| e + 1);
        let (name, after) = match end {
            Some(e) if rest[e..].starts_with(';') => (&rest[1..e], &rest[e + 1..]),
            _ => {
                out.push('&');
                rest = &rest[1..];
                continue;
            }
        };
        let decoded = match name {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some(' '),
            "ndash" => Some('–'),
            "mdash" => Some('—'),
            "rarr" => Some('→'),
            "hellip" => Some('…'),
            "copy" => Some('©'),
            n if n.starts_with("#x") || n.starts_with("#X") => u32::from_str_radix(&n[2..], 16)
                .ok()
                .and_then(char::from_u32),
            n if n.starts_with('#') => n[1..].parse::<u32>().ok().and_then(char::from_u32),
            _ => None,
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = after;
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------------------------
// Mallard
// ---------------------------------------------------------------------------------------------

/// A Mallard page: its title, the `<desc>` of its `<info>` (as keywords), section titles and
/// text, without the `<info>` block (credits, licence, links).
pub fn mallard(text: &str) -> Page {
    let Ok(dom) = tl::parse(text, tl::ParserOptions::default()) else {
        return Page::default();
    };
    let parser = dom.parser();
    let mut page = Page::default();
    let mut headings = Vec::new();
    let mut keywords = Vec::new();
    // (handle, depth, inside <info>)
    let mut stack: Vec<(tl::NodeHandle, usize, bool)> = dom
        .children()
        .iter()
        .rev()
        .map(|h| (*h, 0, false))
        .collect();
    while let Some((handle, depth, in_info)) = stack.pop() {
        let Some(node) = handle.get(parser) else {
            continue;
        };
        match node {
            tl::Node::Raw(raw) if !in_info => {
                page.body.push_str(&decode_entities(&raw.as_utf8_str()));
            }
            tl::Node::Tag(tag) if depth < MAX_DEPTH => {
                let name = tag.name().as_utf8_str().to_ascii_lowercase();
                let inner = || collapse(&decode_entities(&text_of(tag, parser)));
                match name.as_str() {
                    "title" if !in_info => {
                        let t = inner();
                        if page.title.is_empty() {
                            page.title = t.clone();
                        } else {
                            headings.push(t.clone());
                        }
                        page.body.push(' ');
                        page.body.push_str(&t);
                        page.body.push(' ');
                        continue;
                    }
                    "desc" if in_info => keywords.push(inner()),
                    "title" if in_info => {
                        // <title type="link"> etc.: alternative titles are keywords.
                        keywords.push(inner());
                        continue;
                    }
                    _ => {}
                }
                let child_info = in_info || name == "info";
                page.body.push(' ');
                for child in tag.children().top().as_slice().iter().rev() {
                    stack.push((*child, depth + 1, child_info));
                }
            }
            _ => {}
        }
    }
    page.headings = headings.join("\n");
    page.keywords = keywords.join("\n");
    page
}

/// The text inside an element (iterative: no recursion on deep nesting).
fn text_of(tag: &tl::HTMLTag<'_>, parser: &tl::Parser<'_>) -> String {
    let mut out = String::new();
    let mut stack: Vec<(tl::NodeHandle, usize)> = tag
        .children()
        .top()
        .as_slice()
        .iter()
        .rev()
        .map(|h| (*h, 0))
        .collect();
    while let Some((h, depth)) = stack.pop() {
        match h.get(parser) {
            Some(tl::Node::Raw(r)) => out.push_str(&r.as_utf8_str()),
            Some(tl::Node::Tag(t)) if depth < MAX_DEPTH && out.len() < MAX_FIELD_CHARS => {
                out.push(' ');
                for c in t.children().top().as_slice().iter().rev() {
                    stack.push((*c, depth + 1));
                }
            }
            _ => {}
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// man pages
// ---------------------------------------------------------------------------------------------

/// A man page in roff: `name - what it does` (from the NAME section) as title and keyword,
/// `.SH`/`.SS` as headings, the text without requests and font escapes as body.
pub fn man(text: &str) -> Page {
    let mut page = Page::default();
    let mut headings = Vec::new();
    let mut section = String::new();
    let mut name_line = String::new();
    let mut th_name = String::new();
    for line in text.lines() {
        let line = line.trim_end();
        if let Some(req) = line.strip_prefix('.').or_else(|| line.strip_prefix('\'')) {
            let (cmd, args) = req
                .trim_start()
                .split_once(' ')
                .unwrap_or((req.trim_start(), ""));
            let args = roff_text(&unquote(args));
            match cmd {
                "TH" => th_name = args.split_whitespace().next().unwrap_or("").to_lowercase(),
                "SH" | "SS" => {
                    section = args.to_uppercase();
                    if !args.is_empty() {
                        headings.push(args.clone());
                    }
                }
                "B" | "I" | "BR" | "IR" | "RB" | "RI" | "BI" | "IB" | "SM" | "SB" | "IP" | "TP"
                | "Nm" | "Nd" | "Sh" | "It" | "Fl" | "Ar" => {
                    push_man_text(&mut page, &mut name_line, &section, &args)
                }
                _ => {}
            }
            continue;
        }
        let t = roff_text(line);
        push_man_text(&mut page, &mut name_line, &section, &t);
    }
    let name_line = collapse(&name_line);
    page.title = if name_line.is_empty() {
        th_name
    } else {
        name_line.clone()
    };
    page.keywords = name_line;
    page.headings = headings.join("\n");
    page
}

/// Text of a man page: the NAME section's text also makes the title.
fn push_man_text(page: &mut Page, name_line: &mut String, section: &str, text: &str) {
    if text.is_empty() {
        return;
    }
    if section == "NAME" && name_line.len() < MAX_TITLE_CHARS {
        name_line.push_str(text);
        name_line.push(' ');
    }
    if page.body.len() < MAX_BODY_CHARS * 4 {
        page.body.push_str(text);
        page.body.push('\n');
    }
}

/// Arguments of a roff request without their quotes.
fn unquote(args: &str) -> String {
    args.replace('"', "")
}

/// Roff text with escapes reduced: fonts (`\fB`), `\-`, `\(xx`, `\*(xx`, `\&`, comments.
fn roff_text(line: &str) -> String {
    let line = match line.find("\\\"") {
        Some(i) => &line[..i],
        None => line,
    };
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('f') => match chars.next() {
                Some('(') => {
                    chars.next();
                    chars.next();
                }
                Some('[') => {
                    for c in chars.by_ref() {
                        if c == ']' {
                            break;
                        }
                    }
                }
                _ => {}
            },
            Some('-') => out.push('-'),
            Some('e') | Some('\\') => out.push('\\'),
            Some('(') => {
                let a = chars.next();
                let b = chars.next();
                match (a, b) {
                    (Some('e'), Some('m')) | (Some('e'), Some('n')) => out.push('-'),
                    (Some('b'), Some('u')) => out.push('•'),
                    (Some('d'), Some('q')) | (Some('l'), Some('q')) | (Some('r'), Some('q')) => {
                        out.push('"')
                    }
                    _ => {}
                }
            }
            Some('*') => match chars.next() {
                Some('(') => {
                    chars.next();
                    chars.next();
                }
                Some('[') => {
                    for c in chars.by_ref() {
                        if c == ']' {
                            break;
                        }
                    }
                }
                _ => {}
            },
            Some(' ') => out.push(' '),
            Some('&') | Some('/') | Some(',') | Some('c') | Some('%') | Some('|') | Some('^') => {}
            Some(other) => out.push(other),
            None => {}
        }
    }
    out.trim().to_string()
}

// ---------------------------------------------------------------------------------------------
// Markdown
// ---------------------------------------------------------------------------------------------

/// A Markdown page: the first `#` heading is the title, every `#` heading a heading.
pub fn markdown(text: &str) -> Page {
    let mut page = Page::default();
    let mut headings = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('#') {
            let h = trimmed.trim_start_matches('#').trim().to_string();
            if page.title.is_empty() {
                page.title = h.clone();
            } else if !h.is_empty() {
                headings.push(h.clone());
            }
        }
        page.body.push_str(line);
        page.body.push('\n');
    }
    page.headings = headings.join("\n");
    page
}

// ---------------------------------------------------------------------------------------------
// The reference system's JSON guidance
// ---------------------------------------------------------------------------------------------

/// One record of the reference system's help format: `{application, request, guidance[]}`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Guidance {
    /// The application it is for.
    #[serde(default)]
    pub application: String,
    /// The request it answers.
    pub request: String,
    /// The steps.
    #[serde(default)]
    pub guidance: Vec<String>,
}

impl Guidance {
    /// The record as a page: the request is the title, the steps the body.
    pub fn page(&self) -> Page {
        Page {
            title: self.request.clone(),
            keywords: self.request.clone(),
            headings: String::new(),
            body: format!("{}\n{}", self.request, self.guidance.join("\n")),
        }
        .bounded()
    }
}

/// The guidance records of a JSON file: one object, an array of them, or one per line.
pub fn guidance(text: &str) -> Result<Vec<Guidance>, String> {
    if let Ok(one) = serde_json::from_str::<Guidance>(text) {
        return Ok(vec![one]);
    }
    if let Ok(many) = serde_json::from_str::<Vec<Guidance>>(text) {
        return Ok(many);
    }
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Guidance>(l).map_err(|e| e.to_string()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Whitespace runs made one space, trimmed.
pub fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// At most `max` characters of `s`.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LO_PAGE: &str = include_str!("../tests/fixtures/lo_line_fix.html");
    const GIMP_PAGE: &str = include_str!("../tests/fixtures/gimp_alpha_add.html");
    const MALLARD: &str = include_str!("../tests/fixtures/mallard.page");
    const MAN: &str = include_str!("../tests/fixtures/ls.1");

    #[test]
    fn libreoffice_page_gives_title_keywords_headings_and_body_without_chrome() {
        let p = extract(Format::Html, LO_PAGE, "x");
        assert_eq!(p.title, "Freezing Rows or Columns as Headers");
        assert!(p.keywords.contains("rows, freezing"), "{}", p.keywords);
        assert!(p.keywords.contains("freezing rows or columns"));
        assert!(
            p.headings
                .starts_with("Freezing Rows or Columns as Headers"),
            "{}",
            p.headings
        );
        assert!(p.body.contains("you can freeze some rows or columns"));
        assert!(
            p.body.contains("View - Freeze Rows and Columns"),
            "related topics kept"
        );
        for chrome in [
            "Help content debug info",
            "Search in chosen module",
            "LibreOffice 7.4 Help",
            "setupModules",
        ] {
            assert!(!p.body.contains(chrome), "{chrome} in {}", p.body);
            assert!(!p.headings.contains(chrome));
        }
    }

    /// A LibreOffice page titled by its dialog's tab, with its "To access this command…"
    /// block as the help writes it (`access`: the block's paragraphs).
    fn tab_page(title: &str, access: &str) -> String {
        format!(
            "<!DOCTYPE html><html><head><title>{title}</title></head><body>\
             <div id=\"DisplayArea\"><h1>{title}</h1><p>Defines the settings.</p>\
             <a name=\"howtoget\"></a><div class=\"howtoget\"><div><p class=\"howtogetheader\">\
             To access this command...</p></div><div class=\"howtogetbody\">{access}</div></div>\
             <h2>Update</h2><p>Choose Edit - Other - Thing tab.</p></div></body></html>"
        )
    }

    #[test]
    fn a_page_titled_by_a_tab_is_named_with_its_dialog() {
        let general = tab_page(
            "General",
            "<div class=\"embedded\"><p class=\"embedded\">Open a text document, choose \
             <span class=\"switchinline\"><span hidden=\"true\" class=\"MAC\">\
             <span class=\"emph\">LibreOffice - Preferences</span></span><span hidden=\"true\">\
             <span class=\"emph\">Tools - Options</span></span></span>\
             <span class=\"emph\"> - LibreOffice Writer - General</span>.</p></div>",
        );
        let p = extract(Format::Html, &general, "x");
        assert_eq!(p.title, "General (Tools - Options - LibreOffice Writer)");
        // the body is as before: the Mac's menu too
        assert!(p.body.contains("LibreOffice - Preferences"), "{}", p.body);
        let page = tab_page(
            "Page",
            "<div class=\"embedded\"><p class=\"embedded\">Choose <span class=\"menuitem\">\
             Slide - Slide Properties</span> and then click the <span class=\"emph\">Page</span> \
             tab\n</p></div>",
        );
        assert_eq!(
            extract(Format::Html, &page, "x").title,
            "Page (Slide - Slide Properties)"
        );
        // the first way in is the one named; others follow on their own lines
        let font = tab_page(
            "Font Effects",
            "<p>Choose <span>Format - Character - Font Effects</span> tab.</p>\
             <p>Choose View - Styles - Modify - Font Effects tab.</p>",
        );
        assert_eq!(
            extract(Format::Html, &font, "x").title,
            "Font Effects (Format - Character)"
        );
    }

    #[test]
    fn commands_and_pages_without_a_way_in_keep_their_title() {
        for (title, access) in [
            // a command is named by its title already
            (
                "Duplicate Slide",
                "<p>Choose <span>Insert - Duplicate Slide</span></p>",
            ),
            // the path does not end at the title
            ("Columns", "<p>Choose Format - Columns - Settings.</p>"),
            (
                "Options",
                "<p>Right-click a form control and choose its properties.</p>",
            ),
            ("Export", ""),
        ] {
            let p = extract(Format::Html, &tab_page(title, access), "x");
            assert_eq!(p.title, title, "{access}");
        }
        // a page without the block: nothing to name it by, a later path is no way in
        let p = extract(
            Format::Html,
            "<html><title>Thing</title><body><p>Choose Edit - Other - Thing tab.</p></body></html>",
            "x",
        );
        assert_eq!(p.title, "Thing");
    }

    #[test]
    fn dialog_names_come_from_menu_paths_only() {
        for (title, path, dialog) in [
            (
                "Alignment",
                "Choose Format - Cells - Alignment tab",
                Some("Format - Cells"),
            ),
            ("Hide", "Choose Format - Rows - Hide", Some("Format - Rows")),
            (
                "Options",
                "Choose Data - Sort - Options tab",
                Some("Data - Sort"),
            ),
            // a single menu before a tab is a dialog of its own; before a command, a menu
            ("Fonts", "Choose Character - Fonts tab", Some("Character")),
            ("Bold", "Choose Format - Bold", None),
            ("Grid", "Choose View - Grid and Helplines - Display", None),
            ("", "Choose View - Grid", None),
            // a sentence is not a menu path
            (
                "Options",
                "You set this when you open the document in the window of a program - Options tab",
                None,
            ),
            // not ASCII: no panic, whatever case folding would do to lengths
            ("İ", "Choose Ⱥ - İİ - İ tab", Some("Ⱥ - İİ")),
        ] {
            assert_eq!(dialog_of(title, path).as_deref(), dialog, "{title}: {path}");
        }
    }

    #[test]
    fn gimp_page_loses_its_section_numbers_and_navigation() {
        let p = extract(Format::Html, GIMP_PAGE, "x");
        assert_eq!(p.title, "Add Alpha Channel");
        assert!(
            p.headings.contains("Activate the Command"),
            "{}",
            p.headings
        );
        assert!(p.body.contains("An alpha channel is automatically added"));
        assert!(!p.body.contains("Prev"), "{}", p.body);
        // the XML declaration and the document type are not text: the body starts with the
        // page's own words (they are what the model reads of it)
        for prolog in ["PUBLIC", "DTD", "xhtml1", "xml version"] {
            assert!(!p.body.contains(prolog), "{prolog}: {}", p.body);
        }
        assert!(
            p.body.trim_start().starts_with("7.34. Add Alpha Channel"),
            "{}",
            p.body
        );
        // the section the page is part of, without its number, is its first heading
        assert!(
            p.headings
                .starts_with("The “Layer” Menu\nAdd Alpha Channel\n"),
            "{}",
            p.headings
        );
    }

    #[test]
    fn the_section_a_page_is_part_of_is_a_heading_unless_it_is_the_manual() {
        let page = |up: &str| {
            html(&format!(
                "<html><head><title>3.13. Heal</title>\
                 <link rel=\"home\" href=\"index.html\" title=\"The Manual\"/>{up}</head>\
                 <body><h3>3.13. Heal</h3><p>Heals.</p></body></html>"
            ))
        };
        let p = page(r#"<link rel="up" href="t.html" title="3. Paint Tools"/>"#);
        assert_eq!(p.headings, "Paint Tools\nHeal");
        assert_eq!(p.title, "Heal");
        assert!(!p.body.contains("Paint Tools"), "{}", p.body);
        let p = page(r#"<link rel="up" title="Chapter 17. Filters &amp; Effects"/>"#);
        assert_eq!(p.headings, "Filters & Effects\nHeal");
        // the manual's first page says nothing of where the page is; neither do other links
        assert_eq!(
            page(r#"<link rel="up" title="The Manual"/>"#).headings,
            "Heal"
        );
        assert_eq!(
            page(r#"<link rel="next" title="3.14. Clone"/>"#).headings,
            "Heal"
        );
        assert_eq!(page(r#"<link rel="up" href="x.html"/>"#).headings, "Heal");
        assert_eq!(strip_label("Part II.  How do I"), "How do I");
        assert_eq!(strip_label("Chapter"), "Chapter");
        assert_eq!(strip_label("Part of a whole"), "Part of a whole");
    }

    #[test]
    fn a_prolog_of_declarations_doctype_and_comments_is_skipped_and_nothing_else() {
        for page in [
            "<?xml version=\"1.0\"?>\n<!DOCTYPE html PUBLIC \"-//W3C//DTD\" \"x.dtd\">\n\
             <html><title>T</title><p>Body</p></html>",
            "\u{feff}<!-- generated -->\n<!doctype html><html><title>T</title><p>Body</p>",
            "<title>T</title><p>Body</p>",
        ] {
            let p = html(page);
            assert_eq!(p.title, "T", "{page}");
            assert_eq!(collapse(&p.body), "Body", "{page}");
        }
        // an unclosed declaration is left to the parser, never read past the text's end
        assert_eq!(after_prolog("<?xml version"), "<?xml version");
        assert_eq!(after_prolog("  <p>x</p>"), "  <p>x</p>");
    }

    #[test]
    fn entities_are_decoded() {
        assert_eq!(
            decode_entities("a &amp; b &lt;c&gt; &#65;&#x42; &bogus; &"),
            "a & b <c> AB &bogus; &"
        );
        let p = html("<title>Cut &amp; Paste</title><p>x&nbsp;y</p>");
        assert_eq!(p.title, "Cut & Paste");
    }

    #[test]
    fn mallard_page_gives_title_desc_and_sections_without_credits() {
        let p = extract(Format::Mallard, MALLARD, "x");
        assert_eq!(p.title, "Calculate percentages");
        assert!(p.keywords.contains("Use the percent key"), "{}", p.keywords);
        assert!(p.headings.contains("Percent of a number"));
        assert!(p.body.contains("type 20 % 150"), "{}", p.body);
        assert!(!p.body.contains("Creative Commons"), "{}", p.body);
        assert!(!p.body.contains("Jane Doe"));
    }

    #[test]
    fn man_page_gives_name_line_sections_and_plain_text() {
        let p = extract(Format::Man, MAN, "x");
        assert_eq!(p.title, "ls - list directory contents");
        assert!(p.headings.contains("DESCRIPTION"));
        assert!(p.body.contains("-a, --all"), "{}", p.body);
        assert!(!p.body.contains("\\f"), "{}", p.body);
        assert!(!p.body.contains("DO NOT MODIFY"), "comments dropped");
    }

    #[test]
    fn markdown_and_guidance() {
        let p = extract(
            Format::Markdown,
            "# Make a chart\n\n## Steps\nSelect the data.\n",
            "x",
        );
        assert_eq!(p.title, "Make a chart");
        assert_eq!(p.headings, "Steps");
        let g = guidance(r#"[{"application":"WINWORD.EXE","request":"How to add a page break?","guidance":["Click Insert","Click Page Break"]}]"#).unwrap();
        assert_eq!(g.len(), 1);
        let p = g[0].page();
        assert_eq!(p.title, "How to add a page break?");
        assert!(p.body.contains("Click Page Break"));
        assert!(guidance("{\"nope\": 1}").is_err());
    }

    #[test]
    fn formats_by_name() {
        use std::path::Path;
        assert_eq!(Format::of_path(Path::new("a/ls.1.gz")), Some(Format::Man));
        assert_eq!(Format::of_path(Path::new("a/x.HTML")), Some(Format::Html));
        assert_eq!(
            Format::of_path(Path::new("a/x.page")),
            Some(Format::Mallard)
        );
        assert_eq!(Format::of_path(Path::new("a/x.png")), None);
    }

    #[test]
    fn deep_nesting_and_huge_pages_stay_bounded() {
        let deep = format!(
            "<title>t</title>{}x{}",
            "<div>".repeat(100_000),
            "</div>".repeat(100_000)
        );
        let p = extract(Format::Html, &deep, "f");
        assert_eq!(p.title, "t");
        let huge = format!("<p>{}</p>", "word ".repeat(1_000_000));
        let p = extract(Format::Html, &huge, "f");
        assert!(p.body.chars().count() <= MAX_BODY_CHARS);
        let long_title = format!("<title>{}</title>", "t".repeat(10_000));
        assert!(
            extract(Format::Html, &long_title, "f")
                .title
                .chars()
                .count()
                <= MAX_TITLE_CHARS
        );
    }

    proptest::proptest! {
        #[test]
        fn any_input_is_extracted_within_bounds(s in ".{0,2000}") {
            for f in [Format::Html, Format::Mallard, Format::Man, Format::Markdown, Format::Text] {
                let p = extract(f, &s, "fallback");
                proptest::prop_assert!(p.title.chars().count() <= MAX_TITLE_CHARS);
                proptest::prop_assert!(p.body.chars().count() <= MAX_BODY_CHARS);
            }
        }

        #[test]
        fn entity_decoding_never_panics(s in "[&#;a-zA-Z0-9x ]{0,200}") {
            let _ = decode_entities(&s);
        }
    }
}
