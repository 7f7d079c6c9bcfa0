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

// The title state/chat.py gives the links it makes of [ref:N] citations.
const CITATION = "r42:bron";

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

// Images from elsewhere become their alt text (a reader still learns what was there); links that leave
// the app open in a new tab, without a referrer, marked for the reader (`data-r42-external`).
function applyOriginRules(node) {
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
    if (child.tagName === "a" && child.properties?.title === CITATION) {
      // a source chip R42 made from a [ref:N] (state/chat.py strips this mark from what the model wrote)
      const { title, ...rest } = child.properties;
      child.properties = { ...rest, dataR42Cite: "true" };
    } else if (child.tagName === "a" && typeof child.properties?.href === "string" && !isSameOriginPath(child.properties.href)
        && !child.properties.href.startsWith("#")) {
      child.properties = { ...child.properties, target: "_blank", rel: ["noopener", "noreferrer", "nofollow"],
        dataR42External: "true" };
    }
    applyOriginRules(child);
    return child;
  });
}

export default function r42Sanitize() {
  const sanitize = rehypeSanitize(R42_SCHEMA);
  return (tree) => {
    const clean = sanitize(tree);
    applyOriginRules(clean);
    return clean;
  };
}
