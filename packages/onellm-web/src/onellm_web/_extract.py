"""From a page's HTML to the HTML of its main content: the tree, the main part, what is left out, absolute links.

The text first goes through `_sanitize` (linear time, canonical tags), then `html.parser` builds a tree with the
repairs a browser makes for the common mistakes: void elements, a `p`, `li`, `dt`, `dd`, table row or cell closed by
the next one, end tags without a start tag ignored, content before or without `<body>` put in an implied body. The tree
is bounded: elements nested deeper than `MAX_DEPTH` are flattened into their ancestor (their text is kept) and
elements beyond `MAX_ELEMENTS` are not created.

The main content is the `main` element (or `role="main"`) when it holds a fair share of the text, else the one
`article` that holds most of the articles' text, else the body. Within it, these are left out: scripts, styles,
embedded objects, forms and their controls, navigation, asides, footers, a page-level header, dialogs, hidden elements
(`hidden`, `aria-hidden="true"`, `display: none`), elements whose ARIA role is navigation, banner, contentinfo,
complementary, search or a menu, and elements whose class or id names boilerplate (cookie banners, share bars, ads,
breadcrumbs, ...). A heuristic never removes an element that holds more than half of the text, so a page wrapped in
one form or one oddly named `div` keeps its content.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Final
from urllib.parse import urljoin, urlsplit

from onellm_web._sanitize import sanitize

__all__ = ["MAX_DEPTH", "MAX_ELEMENTS", "MAX_WRITTEN", "Extracted", "extract"]

MAX_DEPTH: Final = 100
"""Elements nested deeper are flattened into their ancestor: markdownify converts recursively."""

MAX_ELEMENTS: Final = 100_000
"""Elements created for one page; tags beyond are ignored and their text kept."""

MAX_WRITTEN: Final = 30_000
"""Elements of the main content handed to markdownify (about 50 microseconds each); the rest is left out, and the
content ends with a note saying so."""

_MAX_TITLE_CHARS: Final = 500

_KEPT_ATTRIBUTES: Final = frozenset(
    {
        "href",
        "src",
        "data-src",
        "data-lazy-src",
        "srcset",
        "alt",
        "id",
        "class",
        "role",
        "hidden",
        "aria-hidden",
        "style",
        "colspan",
        "rowspan",
        "start",
        "name",
        "property",
        "content",
        "charset",
        "http-equiv",
    }
)

_VOID: Final = frozenset(
    {
        "area",
        "base",
        "basefont",
        "bgsound",
        "br",
        "col",
        "embed",
        "frame",
        "hr",
        "img",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)

_SKIPPED: Final = frozenset(
    {
        "applet",
        "audio",
        "button",
        "canvas",
        "colgroup",
        "datalist",
        "dialog",
        "frameset",
        "map",
        "math",
        "object",
        "optgroup",
        "option",
        "select",
        "svg",
        "template",
        "video",
    }
)
"""Elements dropped with everything inside them while the tree is built."""

_HEAD_ONLY: Final = frozenset({"title", "meta", "link", "base", "style", "script", "noscript"})

_CLOSES_P: Final = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "center",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "li",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "ul",
        "dd",
        "dt",
    }
)

_PHRASING: Final = frozenset(
    {
        "a",
        "abbr",
        "b",
        "bdi",
        "bdo",
        "big",
        "cite",
        "code",
        "data",
        "del",
        "dfn",
        "em",
        "font",
        "i",
        "ins",
        "kbd",
        "label",
        "mark",
        "nobr",
        "q",
        "rp",
        "rt",
        "ruby",
        "s",
        "samp",
        "small",
        "span",
        "strike",
        "strong",
        "sub",
        "sup",
        "time",
        "tt",
        "u",
        "var",
    }
)

_HEADINGS: Final = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

_BLOCK_OUT: Final = frozenset(
    {
        "address",
        "article",
        "blockquote",
        "caption",
        "dd",
        "details",
        "div",
        "dl",
        "dt",
        "figcaption",
        "figure",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
    }
)
"""Block elements written out under their own name; any other unknown element becomes a `div`."""

_INLINE_OUT: Final = frozenset(
    {
        "a",
        "abbr",
        "b",
        "br",
        "cite",
        "code",
        "del",
        "dfn",
        "em",
        "i",
        "img",
        "ins",
        "kbd",
        "mark",
        "q",
        "s",
        "samp",
        "small",
        "span",
        "strike",
        "strong",
        "sub",
        "sup",
        "time",
        "u",
        "var",
    }
)

_INLINE_ALIASES: Final = {"font": "span", "label": "span", "tt": "code", "big": "span", "nobr": "span", "wbr": ""}

_DROPPED_NAMES: Final = frozenset({"nav", "aside", "footer", "form", "fieldset", "label", "legend"})

_DROPPED_ROLES: Final = frozenset(
    {
        "navigation",
        "banner",
        "contentinfo",
        "complementary",
        "search",
        "dialog",
        "alertdialog",
        "menu",
        "menubar",
        "toolbar",
        "tablist",
    }
)

_BOILERPLATE_TOKENS: Final = frozenset(
    {
        "ad",
        "ads",
        "adsbygoogle",
        "advert",
        "advertisement",
        "breadcrumb",
        "breadcrumbs",
        "consent",
        "cookie",
        "cookies",
        "footer",
        "gdpr",
        "gnav",
        "header",
        "masthead",
        "menu",
        "modal",
        "nav",
        "navbar",
        "navi",
        "navigation",
        "newsletter",
        "pankuzu",
        "popup",
        "promo",
        "rail",
        "share",
        "sharing",
        "side",
        "sidebar",
        "sidemenu",
        "sidenav",
        "skip",
        "social",
        "sponsored",
        "subscribe",
        "toc",
        "topicpath",
    }
)
"""Words in a class or id that mark boilerplate (`cookie-banner`, `globalNavi`, `share-tools`); never applied to an
element that holds the page's `h1` or more than half of the text."""

_NO_TOKEN_RULE: Final = frozenset(
    {"body", "main", "article", "table", "thead", "tbody", "tfoot", "tr", "td", "th", "caption", *_HEADINGS}
)
"""Elements whose class words never drop them: a table row classed `gridHeader` is still data."""
_TOKEN_SPLIT: Final = re.compile(r"[^a-z0-9]+")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_HIDDEN_STYLE: Final = re.compile(r"(?:display\s*:\s*none|visibility\s*:\s*hidden)", re.IGNORECASE)
_LANGUAGE_CLASS: Final = re.compile(
    r"(?:^|\s)(?:language|lang|highlight-source|highlight)-([A-Za-z0-9_+#.-]{1,40})(?=\s|$)"
)
_PERMALINK_TEXT: Final = frozenset({"", "¶", "#", "§", "🔗", "⚓", "link", "permalink"})
_SAFE_SCHEMES: Final = frozenset({"http", "https", "mailto", "tel", "ftp"})
_SPACE: Final = re.compile(r"\s+")


class _Element:
    __slots__ = ("attrs", "children", "name", "text_length")

    def __init__(self, name: str, attrs: dict[str, str]) -> None:
        self.name = name
        self.attrs = attrs
        self.children: list[_Element | str] = []
        self.text_length = 0

    def elements(self) -> Iterator[_Element]:
        """Every element below this one, in document order (without recursion)."""
        stack = [iter(self.children)]
        while stack:
            for child in stack[-1]:
                if isinstance(child, _Element):
                    yield child
                    stack.append(iter(child.children))
                    break
            else:
                stack.pop()

    def text(self) -> str:
        pieces: list[str] = []
        stack: list[_Element | str] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                pieces.append(node)
            else:
                stack.extend(reversed(node.children))
        return _SPACE.sub(" ", "".join(pieces)).strip()


class _TreeBuilder(HTMLParser):
    """Builds a bounded tree from sanitized HTML, repairing what browsers repair."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Element("#root", {})
        self.head: _Element | None = None
        self.body: _Element | None = None
        self.stack: list[_Element] = [self.root]
        self.title_parts: list[str] | None = None
        self.title: str | None = None
        self.meta: dict[str, str] = {}
        self.base: str | None = None
        self.elements = 0
        self.skipping = 0
        self.overflow: dict[str, int] = {}

    # -- the stack

    @property
    def current(self) -> _Element:
        return self.stack[-1]

    def _pop_to(self, index: int) -> None:
        """Close the element at `index` in the stack and everything opened inside it."""
        del self.stack[index:]

    def _index(self, names: frozenset[str] | set[str], stop: frozenset[str] | set[str] = frozenset()) -> int:
        """Where the nearest open element named in `names` is, looking down from the top; -1 when an element named in
        `stop` (or the body) comes first."""
        for index in range(len(self.stack) - 1, 0, -1):
            name = self.stack[index].name
            if name in names:
                return index
            if name in stop or self.stack[index] is self.body:
                return -1
        return -1

    def _ensure_body(self) -> None:
        if self.body is not None:
            if self.head is not None and self.head in self.stack:
                self._pop_to(self.stack.index(self.head))
            return
        if self.head is not None and self.head in self.stack:
            self._pop_to(self.stack.index(self.head))
        self.body = _Element("body", {})
        self.root.children.append(self.body)
        self.stack.append(self.body)

    def _in_head(self) -> bool:
        return self.head is not None and self.current is self.head

    # -- events

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values: dict[str, str] = {}
        for key, value in attrs:
            values.setdefault(key, value or "")
        if self.skipping:
            if tag not in _VOID:
                self.stack.append(_Element(tag, {}))
                self.skipping += 1
            return
        if tag == "html":
            return
        if tag == "head":
            if self.head is None and self.body is None:
                self.head = _Element("head", {})
                self.root.children.append(self.head)
                self.stack.append(self.head)
            return
        if tag == "body":
            if self.body is None:
                self._ensure_body()
                assert self.body is not None
                self.body.attrs = values
            return
        if tag == "title":
            if self.title is None and self.title_parts is None:
                self.title_parts = []
            return
        if tag == "meta":
            self._meta(values)
            return
        if tag == "base":
            if self.base is None and values.get("href"):
                self.base = values["href"]
            return
        if tag in _HEAD_ONLY:
            return
        self._ensure_body()
        if tag in _SKIPPED:
            self.stack.append(_Element(tag, {}))
            self.skipping = 1
            return
        if tag in _VOID and tag not in ("br", "hr", "img", "wbr"):
            return
        self._close_implied(tag)
        if len(self.stack) >= MAX_DEPTH or self.elements >= MAX_ELEMENTS:
            if tag not in _VOID:
                self.overflow[tag] = self.overflow.get(tag, 0) + 1
            return
        element = _Element(tag, values)
        self.elements += 1
        self.current.children.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            # Inside a skipped element: match end tags by name so the element ends where it should.
            for index in range(len(self.stack) - 1, len(self.stack) - self.skipping - 1, -1):
                if self.stack[index].name == tag:
                    closed = len(self.stack) - index
                    self._pop_to(index)
                    self.skipping -= closed
                    return
            return
        if tag == "title":
            if self.title_parts is not None:
                self.title = _SPACE.sub(" ", "".join(self.title_parts)).strip()[:_MAX_TITLE_CHARS] or None
                self.title_parts = None
            return
        if tag in ("html", "body"):
            return
        if tag == "head":
            if self.head is not None and self.head in self.stack:
                self._pop_to(self.stack.index(self.head))
            return
        if tag == "br":
            self.handle_starttag("br", [])
            return
        if self.overflow.get(tag):
            self.overflow[tag] -= 1
            return
        for index in range(len(self.stack) - 1, 0, -1):
            element = self.stack[index]
            if element.name == tag:
                self._pop_to(index)
                return
            if element is self.body:
                return

    def handle_data(self, data: str) -> None:
        if self.title_parts is not None:
            if sum(len(p) for p in self.title_parts) < _MAX_TITLE_CHARS * 2:
                self.title_parts.append(data)
            return
        if self.skipping:
            return
        if self.body is None or self._in_head():
            if not data.strip():
                return
            self._ensure_body()
        self.current.children.append(data)

    def _meta(self, values: dict[str, str]) -> None:
        key = (values.get("property") or values.get("name") or "").strip().lower()
        if key and "content" in values and key not in self.meta:
            self.meta[key] = values["content"]

    def _close_implied(self, tag: str) -> None:
        """The end tags a browser implies before `tag` opens."""
        if tag in _CLOSES_P:
            # A paragraph ends where a block starts (only when no other block lies between).
            for index in range(len(self.stack) - 1, 0, -1):
                name = self.stack[index].name
                if name == "p":
                    self._pop_to(index)
                    break
                if name not in _PHRASING:
                    break
        if tag == "li":
            self._close_item({"li"}, {"ul", "ol", "menu", "dir", "table", "div", "section", "article"})
        elif tag in ("dt", "dd"):
            self._close_item({"dt", "dd"}, {"dl", "table", "div"})
        elif tag == "tr":
            self._close_item({"tr"}, {"table", "thead", "tbody", "tfoot"})
        elif tag in ("td", "th"):
            self._close_item({"td", "th"}, {"tr", "table"})
        elif tag in ("thead", "tbody", "tfoot"):
            self._close_item({"thead", "tbody", "tfoot"}, {"table"})
        elif tag in _HEADINGS and self.current.name in _HEADINGS:
            self._pop_to(len(self.stack) - 1)
        elif tag == "a":
            index = self._index({"a"})
            if index > 0:
                self._pop_to(index)

    def _close_item(self, names: set[str], stop: set[str]) -> None:
        index = self._index(names, stop)
        if index > 0:
            self._pop_to(index)

    def close(self) -> None:
        super().close()
        if self.title_parts is not None:
            self.title = _SPACE.sub(" ", "".join(self.title_parts)).strip()[:_MAX_TITLE_CHARS] or None
            self.title_parts = None


# ------------------------------------------------------------------------------------------------------ the main part


def _measure(root: _Element) -> None:
    """Set `text_length` (characters of text without surrounding space) on every element, bottom up."""
    order = [root, *root.elements()]
    for element in reversed(order):
        total = 0
        for child in element.children:
            total += len(child.strip()) if isinstance(child, str) else child.text_length
        element.text_length = total


def _tokens(element: _Element) -> set[str]:
    """The words of an element's class and id: `globalNavi` gives `globalnavi`, `global` and `navi`."""
    raw = f"{element.attrs.get('class', '')} {element.attrs.get('id', '')}"
    words = f"{raw} {_CAMEL.sub(' ', raw)}".lower()
    return {t for t in _TOKEN_SPLIT.split(words) if t}


def _holds_h1(element: _Element) -> bool:
    return any(e.name == "h1" for e in element.elements())


def _hidden(element: _Element) -> bool:
    return "hidden" in element.attrs or element.attrs.get("aria-hidden", "").strip().lower() == "true"


def _role(element: _Element) -> str:
    return element.attrs.get("role", "").strip().lower()


def _dropped(element: _Element, root_length: int, in_section: bool) -> bool:
    """Whether `element` is left out of the main content."""
    if _hidden(element):
        return True
    name = element.name
    major = element.text_length * 2 > root_length and root_length > 0
    if major:
        return False
    if name in _DROPPED_NAMES or (name == "header" and not in_section):
        return True
    if _role(element) in _DROPPED_ROLES:
        return True
    if _HIDDEN_STYLE.search(element.attrs.get("style", "")):
        return True
    if name in _NO_TOKEN_RULE:
        return False
    return not _tokens(element).isdisjoint(_BOILERPLATE_TOKENS) and not _holds_h1(element)


def _pick(body: _Element) -> _Element:
    mains = [e for e in body.elements() if (e.name == "main" or _role(e) == "main") and not _hidden(e)]
    if mains:
        best = max(mains, key=lambda e: e.text_length)
        if best.text_length * 10 >= body.text_length and best.text_length > 0:
            return best
    articles: list[_Element] = []
    skip: set[int] = set()
    for element in body.elements():
        if id(element) in skip:
            continue
        if element.name == "article" and not _hidden(element):
            articles.append(element)
            skip.update(id(inner) for inner in element.elements() if inner.name == "article")
    if articles:
        best = max(articles, key=lambda e: e.text_length)
        total = sum(a.text_length for a in articles)
        if best.text_length * 3 >= total * 2 and best.text_length * 10 >= body.text_length * 3:
            return best
    return body


# ---------------------------------------------------------------------------------------------------- writing out


class Extracted:
    """The main content of a page as clean HTML, with what was found around it."""

    __slots__ = ("base", "complete", "html", "title")

    def __init__(self, title: str | None, html: str, base: str, complete: bool) -> None:
        self.title = title
        """The page's title: `<title>`, else `og:title`, else the first `h1`; None when there is none."""
        self.html = html
        """The main content, as HTML with absolute links, ready for markdownify."""
        self.base = base
        """The URL links were resolved against."""
        self.complete = complete
        """False when the main content had more than `MAX_WRITTEN` elements and the rest was left out."""


def _absolute(base: str, value: str) -> str | None:
    value = value.strip()
    if not value:
        return None
    try:
        joined = urljoin(base, value)
        scheme = urlsplit(joined).scheme.lower()
    except ValueError:
        return None
    return joined if scheme in _SAFE_SCHEMES else None


def _image_source(base: str, attrs: dict[str, str]) -> str | None:
    for key in ("src", "data-src", "data-lazy-src"):
        value = attrs.get(key, "").strip()
        if value and not value.lower().startswith("data:"):
            found = _absolute(base, value)
            if found is not None and urlsplit(found).scheme in ("http", "https"):
                return found
    srcset = attrs.get("srcset", "").strip()
    if srcset:
        first = srcset.split(",", 1)[0].strip().split(" ", 1)[0]
        if first and not first.lower().startswith("data:"):
            return _absolute(base, first)
    return None


def _language(element: _Element) -> str | None:
    """The language a `pre` or its `code` names in a class (`language-rust`, `lang-py`, `highlight-toml`)."""
    for candidate in (element, *(c for c in element.children if isinstance(c, _Element) and c.name == "code")):
        match = _LANGUAGE_CLASS.search(candidate.attrs.get("class", ""))
        if match:
            return match.group(1)
    return None


def _permalink(element: _Element, base: str) -> bool:
    """A heading's "link to this section" anchor (a pilcrow, a `#`): noise in the text."""
    href = element.attrs.get("href", "").strip()
    if not href.startswith("#") and not href.startswith(base.split("#", 1)[0] + "#"):
        return False
    return element.text().lower() in _PERMALINK_TEXT


_LAYOUT_CELL_CHILDREN: Final = frozenset(
    {"h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "blockquote", "pre", "form", "section", "article", "nav"}
)


def _layout_table(table: _Element) -> bool:
    """A table used to lay a page out (nested tables, headings or lists in its cells) rather than to hold data."""
    if _role(table) in ("presentation", "none"):
        return True
    return any(element.name == "table" or element.name in _LAYOUT_CELL_CHILDREN for element in table.elements())


class _Writer:
    def __init__(self, base: str, images: bool, root_length: int) -> None:
        self.base = base
        self.images = images
        self.root_length = root_length
        self.out: list[str] = []
        self.budget = MAX_WRITTEN
        self.exhausted = False

    def write(self, element: _Element, in_section: bool, layout: bool, language: str | None = None) -> None:
        out = self.out
        own = _LANGUAGE_CLASS.search(element.attrs.get("class", ""))
        if own is not None:
            language = own.group(1)
        for child in element.children:
            if self.exhausted:
                return
            if isinstance(child, str):
                out.append(html.escape(child, quote=False))
                continue
            if _dropped(child, self.root_length, in_section):
                continue
            if self.budget <= 0:
                self.exhausted = True
                return
            self.budget -= 1
            name = child.name
            inner_section = in_section or name in ("article", "main", "section")
            inner_layout = layout
            if name == "table":
                inner_layout = _layout_table(child)
            if inner_layout and name in ("table", "thead", "tbody", "tfoot", "tr", "td", "th", "caption"):
                out_name = "div"
            elif name in _BLOCK_OUT or name in _INLINE_OUT:
                out_name = name
            elif name in _INLINE_ALIASES:
                out_name = _INLINE_ALIASES[name]
            else:
                out_name = "div"
            if out_name == "":
                continue
            if out_name == "br" or out_name == "hr":
                out.append(f"<{out_name}>")
                continue
            if out_name == "img":
                if not self.images:
                    continue
                source = _image_source(self.base, child.attrs)
                if source is None:
                    continue
                alt = _SPACE.sub(" ", child.attrs.get("alt", "")).strip()
                out.append(f'<img src="{html.escape(source)}" alt="{html.escape(alt)}">')
                continue
            attributes = ""
            if out_name == "a" and _permalink(child, self.base):
                continue
            if out_name == "a":
                target = _absolute(self.base, child.attrs.get("href", ""))
                if target is None:
                    out_name = "span"
                else:
                    attributes = f' href="{html.escape(target)}"'
            elif out_name in ("td", "th"):
                for key in ("colspan", "rowspan"):
                    value = child.attrs.get(key, "").strip()
                    if value.isdigit() and 0 < int(value) <= 1000:
                        attributes += f' {key}="{value}"'
            elif out_name == "ol":
                start = child.attrs.get("start", "").strip()
                if start.lstrip("-").isdigit() and len(start) < 10:
                    attributes = f' start="{start}"'
            elif out_name == "pre":
                named = _language(child) or language
                if named:
                    attributes = f' class="language-{html.escape(named)}"'
            # A list item outside a list is still an item (browsers draw its bullet).
            orphan = out_name == "li" and element.name not in ("ul", "ol", "menu", "dir")
            out.append(f"<ul><li{attributes}>" if orphan else f"<{out_name}{attributes}>")
            self.write(child, inner_section, inner_layout, language)
            out.append("</li></ul>" if orphan else f"</{out_name}>")


def extract(text: str, url: str, *, images: bool = True) -> Extracted:
    """The main content of the page `text` fetched from `url`, as clean HTML (see the module docstring).

    Args:
        text: The decoded page.
        url: Its final URL, after redirects: relative links are resolved against it (or its `<base href>`).
        images: Keep images (as absolute links); off leaves them out.
    """
    builder = _TreeBuilder()
    builder.feed(sanitize(text, _KEPT_ATTRIBUTES))
    builder.close()
    body = builder.body if builder.body is not None else _Element("body", {})
    _measure(body)
    base = url
    if builder.base is not None:
        resolved = _absolute(url, builder.base)
        if resolved is not None and urlsplit(resolved).scheme in ("http", "https"):
            base = resolved
    title = builder.title or _SPACE.sub(" ", builder.meta.get("og:title", "")).strip() or None
    if title is None:
        heading = next((e for e in body.elements() if e.name == "h1"), None)
        if heading is not None:
            title = heading.text()[:_MAX_TITLE_CHARS] or None
    chosen = _pick(body)
    writer = _Writer(base, images, chosen.text_length)
    writer.write(chosen, chosen.name in ("article", "main", "section"), False)
    result = "".join(writer.out)
    if chosen is not body and not result.strip():
        writer = _Writer(base, images, body.text_length)
        writer.write(body, False, False)
        result = "".join(writer.out)
    return Extracted(title, result, base, not writer.exhausted)
