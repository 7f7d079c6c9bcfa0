// R42Graph: the knowledge graph as a force-directed canvas (react-force-graph-2d).
//
// Props come from GraphState: `nodes` ({id, label, type, color, val, degree, pending}) and `links`
// ({source, target, type, pending}); `focusId` + `focusSeq` centre and zoom on a node each time
// the sequence number changes; `selectedId` is highlighted with its neighbours; `onSelect(id)`
// fires on a node click. Positions survive data refreshes, so a live update (a new topic, an
// approved suggestion) adds nodes without throwing the layout around.
import React, { useCallback, useEffect, useMemo, useRef, useState } from "react";
import ForceGraph2D from "react-force-graph-2d";

const REL_SIZE = 2.6;
const LINK_COLOR = "rgba(100, 104, 120, 0.28)";
const LINK_STRONG = "rgba(62, 99, 221, 0.85)";
const PENDING = "#8b8d98";

function endId(end) {
  return typeof end === "object" && end !== null ? end.id : end;
}

export function R42Graph({ nodes, links, focusId, focusSeq, selectedId, onSelect }) {
  const fgRef = useRef(null);
  const boxRef = useRef(null);
  const known = useRef(new Map());
  const fitted = useRef(false);
  const [size, setSize] = useState({ w: 0, h: 0 });
  const [hoverId, setHoverId] = useState("");

  // Fill the container, whatever the screen size.
  useEffect(() => {
    const box = boxRef.current;
    if (!box) return undefined;
    const measure = () => setSize({ w: box.clientWidth, h: box.clientHeight });
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(box);
    return () => observer.disconnect();
  }, []);

  // New data keeps the positions (and velocities) of the nodes it already had.
  const data = useMemo(() => {
    const before = known.current;
    const next = new Map();
    const ns = (nodes || []).map((n) => {
      const old = before.get(n.id);
      const node = old ? { ...n, x: old.x, y: old.y, vx: old.vx, vy: old.vy } : { ...n };
      next.set(n.id, node);
      return node;
    });
    known.current = next;
    const ls = (links || []).filter((l) => next.has(l.source) && next.has(l.target)).map((l) => ({ ...l }));
    return { nodes: ns, links: ls };
  }, [nodes, links]);

  // The selected (or hovered) node and its neighbours stay bright; the rest fades.
  const active = selectedId || hoverId;
  const near = useMemo(() => {
    const set = new Set();
    if (!active) return set;
    set.add(active);
    data.links.forEach((l) => {
      const s = endId(l.source);
      const t = endId(l.target);
      if (s === active) set.add(t);
      if (t === active) set.add(s);
    });
    return set;
  }, [active, data]);

  // The canvas draws only while something moves. force-graph runs a requestAnimationFrame loop for as long as the
  // page is open, even when it has nothing to redraw (about 8% of a core on an idle graph tab, a laptop's battery
  // for an admin who keeps the live graph open): the loop is paused once the layout has settled and nobody has
  // touched the canvas for a moment, and woken by every pointer or wheel event on it, every new render (data,
  // selection, hover, size), every move of the view (d3-zoom's own, also a pan dragged over a panel), a node
  // dragged, and the tab coming back to the foreground.
  const lastTick = useRef(0);
  const awakeUntil = useRef(0);
  const idleTimer = useRef(null);
  const paused = useRef(false);
  const wake = useCallback((ms = 0) => {
    const fg = fgRef.current;
    const now = performance.now();
    awakeUntil.current = Math.max(awakeUntil.current, now + ms + 600);
    if (!fg) return;
    if (paused.current) {
      paused.current = false;
      lastTick.current = now; // a reheated layout ticks on the next frame; give it that frame
      fg.resumeAnimation();
    }
    if (idleTimer.current) return;
    const check = () => {
      const t = performance.now();
      if (t - lastTick.current > 400 && t > awakeUntil.current && fgRef.current) {
        idleTimer.current = null;
        paused.current = true;
        fgRef.current.pauseAnimation();
        return;
      }
      idleTimer.current = setTimeout(check, 250);
    };
    idleTimer.current = setTimeout(check, 250);
  }, []);
  useEffect(() => { wake(); }); // after every render: new props may need a frame
  useEffect(() => {  // a background tab runs no frames: what arrived meanwhile is drawn on coming back
    const back = () => { if (!document.hidden) wake(); };
    document.addEventListener("visibilitychange", back);
    return () => document.removeEventListener("visibilitychange", back);
  }, [wake]);
  const lastPointerDown = useRef(0);

  // The page's panels over the canvas (elements marked data-covers-graph: the search card, the side panel), in
  // pixels relative to the canvas. Names are not drawn under them, and a selected topic is moved out from under
  // them (on a phone the side panel covers the lower half of the graph).
  const covers = useCallback(() => {
    const box = boxRef.current;
    const page = box && (box.closest(".graph-page") || box.parentElement);
    if (!box || !page) return [];
    const c = box.getBoundingClientRect();
    return Array.from(page.querySelectorAll("[data-covers-graph]")).map((el) => el.getBoundingClientRect())
      .filter((r) => r.width > 0 && r.height > 0)
      .map((r) => ({ left: r.left - c.left, top: r.top - c.top, right: r.right - c.left, bottom: r.bottom - c.top }));
  }, []);

  // The largest part of the canvas that no cover hides: a cover across most of the width takes the band above or
  // below it, a narrower one on the right the strip from its left edge on; a narrower one on the left (the search
  // card) then takes the band above its bottom or the strip left of its right edge, whichever leaves more room.
  const freeArea = useCallback(() => {
    const free = { left: 0, top: 0, right: size.w, bottom: size.h };
    const rest = [];
    for (const r of covers()) {
      if (r.right - r.left >= size.w * 0.6) {
        if ((r.top + r.bottom) / 2 < size.h / 2) free.top = Math.max(free.top, r.bottom);
        else free.bottom = Math.min(free.bottom, r.top);
      } else if ((r.left + r.right) / 2 > size.w / 2) {
        free.right = Math.min(free.right, r.left);
      } else {
        rest.push(r);
      }
    }
    for (const r of rest) {
      if (r.right <= free.left || r.left >= free.right || r.bottom <= free.top || r.top >= free.bottom) continue;
      const below = (free.right - free.left) * (free.bottom - Math.max(free.top, r.bottom));
      const beside = (free.right - Math.max(free.left, r.right)) * (free.bottom - free.top);
      if (below >= beside) free.top = Math.max(free.top, r.bottom);
      else free.left = Math.max(free.left, r.right);
    }
    return free;
  }, [covers, size]);

  // Moves the view so that the node lands in the middle of the free area at zoom `k` (the current one if not
  // given); false when the free area is too small to be worth it.
  const placeInView = useCallback((node, k, duration) => {
    const fg = fgRef.current;
    const free = freeArea();
    if (!fg || free.right - free.left < 80 || free.bottom - free.top < 80) return false;
    const zoom = k || fg.zoom();
    const dx = ((free.left + free.right) / 2 - size.w / 2) / zoom;
    const dy = ((free.top + free.bottom) / 2 - size.h / 2) / zoom;
    wake(duration);
    fg.centerAt(node.x - dx, node.y - dy, duration);
    return true;
  }, [freeArea, size, wake]);
  useEffect(() => () => { if (idleTimer.current) clearTimeout(idleTimer.current); }, []);

  const big = data.nodes.length > 600;
  // prefers-reduced-motion: the layout is computed before the first frame and drawn once, and moves of the view
  // are instant (no drifting nodes, no animated zoom).
  const still = useMemo(() => typeof window !== "undefined" && !!window.matchMedia
    && window.matchMedia("(prefers-reduced-motion: reduce)").matches, []);
  const ms = (duration) => (still ? 0 : duration);

  const focusOn = useCallback((id, attempt) => {
    const fg = fgRef.current;
    const node = known.current.get(id);
    if (!fg || !node) return;
    fitted.current = true; // the reader chose where to look: no automatic re-fit after this
    if (node.x === undefined) {
      if (attempt < 20) setTimeout(() => focusOn(id, attempt + 1), 150);
      return;
    }
    const k = Math.max(fg.zoom(), 3);
    if (!placeInView(node, k, ms(500))) {
      wake(ms(500));
      fg.centerAt(node.x, node.y, ms(500));
    }
    fg.zoom(k, ms(500));
  }, [still, wake, placeInView]);

  // More room between topics than the d3 defaults, so labels can be read.
  useEffect(() => {
    const fg = fgRef.current;
    if (!fg) return;
    fg.d3Force("charge").strength(big ? -40 : -70);
    fg.d3Force("link").distance(big ? 30 : 38);
  }, [size.w > 0, big]);

  // A first fit once the layout has spread a little, and a final one when it settles; never after
  // the reader has zoomed, dragged or clicked (they chose where to look).
  const hasNodes = data.nodes.length > 0;
  useEffect(() => {
    if (!hasNodes) return undefined;
    const timer = setTimeout(() => {
      if (!fitted.current && fgRef.current) {
        wake(ms(300));
        fgRef.current.zoomToFit(ms(300), 40);
      }
    }, 900);
    return () => clearTimeout(timer);
  }, [hasNodes]);

  useEffect(() => {
    if (focusId) focusOn(focusId, 0);
  }, [focusSeq, focusId, focusOn]);

  // A topic selected on the canvas whose side panel then opens over it (on a phone, the lower half of the graph)
  // glides into the free part of the view; checked once the panel is there and a move to it has ended.
  useEffect(() => {
    if (!selectedId) return undefined;
    const since = performance.now();
    const timer = setTimeout(() => {
      if (lastPointerDown.current > since) return; // the reader has taken the view in hand meanwhile
      const fg = fgRef.current;
      const node = known.current.get(selectedId);
      if (!fg || !node || node.x === undefined) return;
      const p = fg.graph2ScreenCoords(node.x, node.y);
      const free = freeArea();
      const margin = 24;
      const hidden = p.x < free.left + margin || p.x > free.right - margin || p.y < free.top + margin
        || p.y > free.bottom - margin;
      if (hidden) placeInView(node, 0, ms(400));
    }, 650);
    return () => clearTimeout(timer);
  }, [selectedId, freeArea, placeInView]);

  // Hooks for tests and benchmarks: which nodes are drawn, and where a node is on screen.
  useEffect(() => {
    window.__r42graph = {
      ids: () => Array.from(known.current.keys()),
      pending: () => Array.from(known.current.values()).filter((n) => n.pending).map((n) => n.id),
      links: () => data.links.map((l) => [endId(l.source), l.type, endId(l.target), !!l.pending]),
      settled: () => Array.from(known.current.values()).every((n) => n.x !== undefined),
      screenOf: (id) => {
        const fg = fgRef.current;
        const node = known.current.get(id);
        const canvas = boxRef.current && boxRef.current.querySelector("canvas");
        if (!fg || !node || node.x === undefined || !canvas) return null;
        const p = fg.graph2ScreenCoords(node.x, node.y);
        const r = canvas.getBoundingClientRect();
        return { x: r.left + p.x, y: r.top + p.y };
      },
      labels: () => {  // the labels drawn in the last frame: topic id (a relation's "source>target", kind
        // "relation") and its box on screen
        const fg = fgRef.current;
        const canvas = boxRef.current && boxRef.current.querySelector("canvas");
        if (!fg || !canvas) return [];
        const r = canvas.getBoundingClientRect();
        return placed.current.map((b) => {
          const a = fg.graph2ScreenCoords(b.x0, b.y0);
          const z = fg.graph2ScreenCoords(b.x1, b.y1);
          return { id: b.id, kind: b.kind || "topic", left: r.left + a.x, top: r.top + a.y, right: r.left + z.x,
            bottom: r.top + z.y };
        });
      },
      labelMs: (reset) => {  // the label pass of the last frames, ms; `reset` starts a new count
        const times = labelTimes.current.slice();
        if (reset) labelTimes.current = [];
        return times;
      },
      drawing: () => !paused.current,  // false once the canvas has stopped drawing (nothing moves)
      freeze: () => {  // pin every node and stop automatic re-fits: screen positions stay put
        fitted.current = true;
        known.current.forEach((n) => { n.fx = n.x; n.fy = n.y; });
      },
    };
  }, [data]);

  const drawNode = useCallback((node, ctx, scale) => {
    const r = Math.sqrt(Math.max(node.val || 1, 0.5)) * REL_SIZE;
    const dim = active && !near.has(node.id);
    ctx.globalAlpha = dim ? 0.18 : 1;
    ctx.beginPath();
    ctx.arc(node.x, node.y, r, 0, 2 * Math.PI);
    if (node.pending) {
      ctx.fillStyle = "#ffffff";
      ctx.fill();
      ctx.setLineDash([3 / scale + 1, 2 / scale + 1]);
      ctx.lineWidth = 1.5;
      ctx.strokeStyle = PENDING;
      ctx.stroke();
      ctx.setLineDash([]);
    } else {
      ctx.fillStyle = node.color;
      ctx.fill();
    }
    if (node.id === selectedId) {
      ctx.beginPath();
      ctx.arc(node.x, node.y, r + 3 / scale + 1, 0, 2 * Math.PI);
      ctx.lineWidth = 2 / scale + 0.5;
      ctx.strokeStyle = "#3e63dd";
      ctx.stroke();
    }
    ctx.globalAlpha = 1;
  }, [active, near, selectedId]);

  // Labels go on after the nodes, most important first (the selected and hovered topic, their neighbours, the
  // names of the relations they touch, then topics by number of relations, then, zoomed in, the other relations'
  // names), each only where it overlaps no label already placed: at any zoom, on a phone too, as many names as can
  // be read and never one over another (a relation's name, drawn by itself, once lay across a topic's). Positions
  // are in graph units; the text is 11 px (a relation's 9 px) on screen whatever the zoom, so its width is measured
  // once per label.
  const order = useMemo(() => data.nodes.slice().sort((a, b) => (b.degree || 0) - (a.degree || 0)
    || (b.val || 0) - (a.val || 0) || String(a.label).localeCompare(String(b.label))), [data]);
  const widths = useRef(new Map());
  const placed = useRef([]);
  const labelTimes = useRef([]); // how long the last frames' label passes took, ms (for bench/bench_graph.py)
  const drawLabels = useCallback((ctx, scale) => {
    const fg = fgRef.current;
    if (!fg) return;
    const t0 = performance.now();
    const byId = known.current;
    const first = [selectedId, hoverId, ...near].filter(Boolean).map((id) => byId.get(id)).filter(Boolean);
    const drawn = (l) => typeof l.source === "object" && typeof l.target === "object" && l.source.x !== undefined;
    const touching = active ? data.links.filter((l) => drawn(l) && (l.source.id === active || l.target.id === active))
      : [];
    const others = scale >= (big ? 5 : 3.2)
      ? data.links.filter((l) => drawn(l) && !(active && (l.source.id === active || l.target.id === active))) : [];
    // the part of the graph on screen: a name cut off at its edge is not drawn (a neighbour's may fit)
    const lo = fg.screen2GraphCoords(0, 0);
    const hi = fg.screen2GraphCoords(size.w, size.h);
    const cell = 120 / scale;
    const cols = Math.ceil((hi.x - lo.x) / cell) + 1;
    const grid = new Map(); // cell number -> boxes placed that touch it
    const seen = new Set();
    const pad = 3 / scale;
    const h = 13 / scale;
    const font = `${11 / scale}px Inter, system-ui, sans-serif`;
    const linkSize = Math.max(9 / scale, 1.2);
    const linkFont = `${linkSize}px Inter, system-ui, sans-serif`;
    const addToGrid = (box) => {
      const c0 = Math.floor((box.x0 - lo.x) / cell);
      const c1 = Math.floor((box.x1 - lo.x) / cell);
      for (let r = Math.floor((box.y0 - lo.y) / cell); r <= Math.floor((box.y1 - lo.y) / cell); r += 1) {
        for (let c = c0; c <= c1; c += 1) {
          const k = r * cols + c;
          if (!grid.has(k)) grid.set(k, []);
          grid.get(k).push(box);
        }
      }
    };
    for (const r of covers()) {  // no name under the search card or the side panel: it could not be read
      const a = fg.screen2GraphCoords(Math.max(r.left, 0), Math.max(r.top, 0));
      const z = fg.screen2GraphCoords(Math.min(r.right, size.w), Math.min(r.bottom, size.h));
      if (z.x > a.x && z.y > a.y) addToGrid({ x0: a.x, y0: a.y, x1: z.x, y1: z.y });
    }
    const out = [];
    // a box on screen over no box placed before it: placed (and returned), else null
    const place = (box) => {
      if (box.x0 + pad < lo.x || box.x1 - pad > hi.x || box.y0 + pad < lo.y || box.y1 - pad > hi.y) return null;
      const c0 = Math.floor((box.x0 - lo.x) / cell);
      const c1 = Math.floor((box.x1 - lo.x) / cell);
      for (let r = Math.floor((box.y0 - lo.y) / cell); r <= Math.floor((box.y1 - lo.y) / cell); r += 1) {
        for (let c = c0; c <= c1; c += 1) {
          const boxes = grid.get(r * cols + c);
          if (boxes && boxes.some((o) => box.x0 < o.x1 && o.x0 < box.x1 && box.y0 < o.y1 && o.y0 < box.y1)) return null;
        }
      }
      addToGrid(box);
      out.push(box);
      return box;
    };
    const measured = (key, text, style) => {
      let width = widths.current.get(key);
      if (width === undefined) {
        ctx.font = style;
        width = ctx.measureText(text).width;
        widths.current.set(key, width);
      }
      return width;
    };
    ctx.lineWidth = 3 / scale;
    const nameNode = (node) => {
      if (seen.has(node.id) || node.x === undefined || node.x < lo.x || node.x > hi.x || node.y < lo.y
        || node.y > hi.y) return;
      seen.add(node.id);
      const bold = node.id === selectedId;
      const w = measured(bold ? `\u0001${node.label}` : node.label, node.label,
        `${bold ? "600 " : ""}11px Inter, system-ui, sans-serif`) / scale;
      const top = node.y + Math.sqrt(Math.max(node.val || 1, 0.5)) * REL_SIZE + 1.5;
      if (!place({ id: node.id, x0: node.x - w / 2 - pad, x1: node.x + w / 2 + pad, y0: top - pad,
        y1: top + h + pad })) return;
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      ctx.strokeStyle = "rgba(255,255,255,0.9)";
      ctx.globalAlpha = active && !near.has(node.id) ? 0.18 : 1;
      ctx.font = bold ? `600 ${font}` : font;
      ctx.strokeText(node.label, node.x, top);
      ctx.fillStyle = node.pending ? "#60646c" : "#1c2024";
      ctx.fillText(node.label, node.x, top);
    };
    const nameLink = (link) => {
      const text = link.label || link.type;
      if (!text) return;
      const w = measured(`\u0002${text}`, text, "9px Inter, system-ui, sans-serif") * linkSize / 9;
      const x = (link.source.x + link.target.x) / 2;
      const y = (link.source.y + link.target.y) / 2;
      const half = linkSize * 0.65;
      if (!place({ id: `${link.source.id}>${link.target.id}`, kind: "relation", x0: x - w / 2 - pad,
        x1: x + w / 2 + pad, y0: y - half - pad, y1: y + half + pad })) return;
      ctx.globalAlpha = 1;
      ctx.fillStyle = "rgba(255,255,255,0.92)";  // the line under it shows through no gap between the words
      ctx.fillRect(x - w / 2 - 1 / scale, y - half, w + 2 / scale, 2 * half);
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.font = linkFont;
      ctx.strokeStyle = "rgba(255,255,255,0.95)";
      ctx.strokeText(text, x, y);
      ctx.fillStyle = link.pending ? PENDING : "#3e63dd";
      ctx.fillText(text, x, y);
    };
    first.forEach(nameNode);
    touching.forEach(nameLink);
    order.forEach(nameNode);
    others.forEach(nameLink);
    ctx.globalAlpha = 1;
    placed.current = out;
    labelTimes.current.push(performance.now() - t0);
    if (labelTimes.current.length > 240) labelTimes.current.shift();
  }, [data, order, active, near, selectedId, hoverId, size, covers, big]);

  const linkTouches = (l) => active && (endId(l.source) === active || endId(l.target) === active);

  return (
    <div ref={boxRef} className="r42-graph-canvas" style={{ position: "absolute", inset: 0 }}
      onPointerDownCapture={() => { fitted.current = true; lastPointerDown.current = performance.now(); wake(); }}
      onPointerMoveCapture={() => wake()} onWheelCapture={() => { fitted.current = true; wake(); }}>
      {size.w > 0 && (
        <ForceGraph2D
          ref={fgRef}
          graphData={data}
          minZoom={0.2}
          maxZoom={8}
          width={size.w}
          height={size.h}
          nodeRelSize={REL_SIZE}
          nodeVal={(n) => n.val}
          nodeLabel={(n) => `${n.label} · ${n.type_label}${n.pending ? " · voorstel" : ""}`}
          nodeCanvasObject={drawNode}
          linkColor={(l) => (l.pending ? PENDING : linkTouches(l) ? LINK_STRONG : LINK_COLOR)}
          linkWidth={(l) => (linkTouches(l) ? 1.6 : 0.8)}
          linkLineDash={(l) => (l.pending ? [4, 3] : null)}
          linkLabel={(l) => l.label || l.type}
          linkDirectionalArrowLength={big ? 0 : 3}
          linkDirectionalArrowRelPos={1}
          onRenderFramePost={drawLabels}
          cooldownTime={big ? 8000 : 5000}
          warmupTicks={still ? (big ? 120 : 300) : big ? 30 : 0}
          cooldownTicks={still ? 0 : Infinity}
          onNodeClick={(n) => onSelect && onSelect(n.id)}
          onNodeHover={(n) => setHoverId(n ? n.id : "")}
          onEngineTick={() => { lastTick.current = performance.now(); }}
          onZoom={() => wake()}
          onNodeDrag={() => wake()}
          onEngineStop={() => {
            if (!fitted.current && fgRef.current) {
              fitted.current = true;
              wake(ms(400));
              fgRef.current.zoomToFit(ms(400), 40);
            }
          }}
          enableNodeDrag={!big}
        />
      )}
    </div>
  );
}
