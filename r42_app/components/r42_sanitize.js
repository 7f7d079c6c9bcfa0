// R42's one HTML sanitiser: a rehype plugin that every markdown rendering runs right after rehype-raw
// (components/markdown.py). It works on the parsed tree that React renders from, node by node, so no
// HTML string is ever parsed twice (the parser gap that mutation XSS lives in), and nothing between
// this plugin and the page can bring back what it removed.
//
// An allowlist (hast-util-sanitize, GitHub's rules, made stricter): plain text formatting, lists,
// tables, links and images only. No script, style, event handler, form, frame, object, embed, base or
// meta; no `style` or `class` attributes (a class could borrow the app's own fixed-position styles);
// links only to http(s), mailto or paths; images only from this app's own origin (a path), so a
// prompt-injected answer cannot send data out through an image URL. Ids and names get a prefix, so
// content can never take over an id the app's scripts look for (`r42-close`, `r42-input`, ...).
//
// Source chips come from R42's own data, never from the text: the renderer passes the chips R42 made for this
// text (`chips`: [{href, label}], the validated citations of one answer) and only a link with exactly that href
// and that text becomes one (`data-r42-cite`). Nothing a writer can put in markdown (a title, an attribute, a
// class) makes a chip; a page without citations (a topic, the editor's preview) has none.
import rehypeSanitize, { defaultSchema } from "rehype-sanitize";

const ARIA = ["ariaDescribedBy", "ariaLabel", "ariaLabelledBy"];

// Whose content goes too, not just the tag: text inside these is code, styles or a document of its own.
const STRIP = ["script", "style", "template", "iframe", "frame", "frameset", "object", "embed", "applet",
  "noscript", "noembed", "noframes", "textarea", "title", "xmp", "plaintext", "svg", "math", "select",
  "option", "datalist", "head", "link", "meta", "base"];

export const R42_SCHEMA = {
  ...defaultSchema,
  tagNames: ["a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "dfn", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "input", "ins", "kbd", "li", "mark", "ol", "p",
    "pre", "q", "s", "samp", "section", "small", "span", "strike", "strong", "sub", "summary", "sup", "table",
    "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var"],
  strip: STRIP,
  attributes: {
    a: [...ARIA, "dataFootnoteBackref", "dataFootnoteRef", "href", "title"],
    abbr: ["title"],
    blockquote: ["cite"],
    code: [["className", /^language-[\w+-]+$/]],
    del: ["cite"],
    h2: [["className", "sr-only"]],
    img: [...ARIA, "alt", "src", "title"],
    input: [["disabled", true], ["type", "checkbox"], "checked"],
    ins: ["cite"],
    li: [["className", "task-list-item"]],
    ol: [...ARIA, "start", ["className", "contains-task-list"]],
    q: ["cite"],
    section: ["dataFootnotes", ["className", "footnotes"]],
    summary: [...ARIA],
    table: [...ARIA],
    td: ["align", "colSpan", "rowSpan", "headers"],
    th: ["align", "colSpan", "rowSpan", "headers", "scope", "abbr"],
    ul: [...ARIA, ["className", "contains-task-list"]],
    "*": ["id", "lang", "dir", "title"],
  },
  protocols: { href: ["http", "https", "mailto"], cite: ["http", "https"], src: ["http", "https"] },
  required: { input: { disabled: true, type: "checkbox" } },
};

// Where a chip may point: a topic of this app, maybe at a passage (core/retrieval.py topic_url, with the slug
// pattern of core/kb.py and the anchor pattern of core/passages.py).
const CHIP_HREF = /^\/topics\/[a-z0-9]+(?:-[a-z0-9]+)*(?:#p-[0-9a-f]{10}(?:-[0-9]{1,4})?)?$/;
const MAX_LABEL = 200; // core/chat_view.py MAX_CITATION_LABEL

// A path on this origin: "/x" but not "//host" or "/\host" (protocol-relative), nor anything with a scheme.
const SAME_ORIGIN_PATH = /^\/(?![/\\])[^\s]*$/;

export function isSameOriginPath(url) {
  return typeof url === "string" && SAME_ORIGIN_PATH.test(url);
}

function textOf(node) {
  if (!node) return "";
  if (node.type === "text") return node.value || "";
  return (node.children || []).map(textOf).join("");
}

function plain(text) {
  return String(text).replace(/\s+/g, " ").trim();
}

// The chips R42 made for this text, as "href\nlabel" keys (a malformed entry is left out).
function chipKeys(chips) {
  const keys = new Set();
  if (!Array.isArray(chips)) return keys;
  for (const c of chips) {
    if (c && typeof c.href === "string" && CHIP_HREF.test(c.href) && typeof c.label === "string"
        && plain(c.label) && Array.from(c.label).length <= MAX_LABEL) {
      keys.add(c.href + "\n" + plain(c.label));
    }
  }
  return keys;
}

// What follows the text of a link that leaves the app: an arrow the eye sees, words a screen reader says.
function externalMarker(words) {
  const arrow = { type: "element", tagName: "span", properties: { className: ["r42-external"], ariaHidden: "true" },
    children: [{ type: "text", value: "\u2197" }] };
  const said = { type: "element", tagName: "span", properties: { className: ["sr-only"] },
    children: [{ type: "text", value: " " + words }] };
  return words ? [arrow, said] : [arrow];
}

// The markdown renderer shows a `pre` as a code block and takes its one `code` child for that: a `pre` of raw
// HTML without exactly that (`<pre>x</pre>`, `<pre> <code>`) would crash the whole page, so it gets one.
function onePreCode(node) {
  const kids = (node.children || []).filter((c) => !(c.type === "text" && !c.value.trim()));
  if (kids.length === 1 && kids[0].type === "element" && kids[0].tagName === "code") {
    node.children = kids;
    return;
  }
  node.children = [{ type: "element", tagName: "code", properties: {}, children: [{ type: "text", value: textOf(node) }] }];
}

// Images from elsewhere become their alt text (a reader still learns what was there); a link R42 made of a
// [ref:N] (its href and text one of `chips`) becomes a source chip showing just its label; links that leave
// the app open in a new tab, without a referrer, marked for the eye and the ear (`data-r42-external`, an arrow,
// `external` for screen readers).
function applyOriginRules(node, chips, external) {
  if (!node || !Array.isArray(node.children)) return;
  node.children = node.children.map((child) => {
    if (child.type !== "element") return child;
    if (child.tagName === "pre") {
      onePreCode(child);
      return child;
    }
    if (child.tagName === "img" && !isSameOriginPath(child.properties?.src)) {
      const alt = child.properties?.alt;
      return { type: "text", value: alt ? `[${alt}]` : "" };
    }
    const href = child.tagName === "a" ? child.properties?.href : undefined;
    if (typeof href === "string" && chips.has(href + "\n" + plain(textOf(child)))) {
      child.properties = { href, dataR42Cite: "true" };
      child.children = [{ type: "text", value: plain(textOf(child)) }];
      return child;
    }
    if (typeof href === "string" && !isSameOriginPath(href) && !href.startsWith("#")) {
      child.properties = { ...child.properties, target: "_blank", rel: ["noopener", "noreferrer", "nofollow"],
        dataR42External: "true" };
      child.children = [...(child.children || []), ...externalMarker(external)];
    }
    applyOriginRules(child, chips, external);
    return child;
  });
}

// Every heading `shift` levels up or down (h2-h6): a topic's text under its page's h1 (core/passages.py
// heading_shift, over the whole topic: the page renders it passage by passage).
function shiftHeadings(node, shift) {
  for (const child of node.children || []) {
    if (child.type !== "element") continue;
    const level = /^h([1-6])$/.exec(child.tagName);
    // never an h1: the page has its own (a setext or raw heading, or GFM's "Footnotes", is not counted by the shift)
    if (level) child.tagName = `h${Math.min(6, Math.max(2, Number(level[1]) + shift))}`;
    shiftHeadings(child, shift);
  }
}

// options: {chips: [{href, label}] (the citations R42 made for this text), external: the words a screen reader
// says after a link that leaves the app (core/messages.py "markdown.external_link"), shift: levels to move every
// heading by (0 when not given)}.
export default function r42Sanitize(options) {
  const sanitize = rehypeSanitize(R42_SCHEMA);
  const chips = chipKeys(options && options.chips);
  const external = String((options && options.external) || "");
  const shift = Math.trunc(Number(options && options.shift) || 0);
  return (tree) => {
    const clean = sanitize(tree);
    applyOriginRules(clean, chips, external);
    if (shift) shiftHeadings(clean, shift);
    return clean;
  };
}
