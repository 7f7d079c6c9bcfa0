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
    fg.centerAt(node.x, node.y, ms(500));
    fg.zoom(Math.max(fg.zoom(), 3), ms(500));
  }, [still]);

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
      if (!fitted.current && fgRef.current) fgRef.current.zoomToFit(ms(300), 40);
    }, 900);
    return () => clearTimeout(timer);
  }, [hasNodes]);

  useEffect(() => {
    if (focusId) focusOn(focusId, 0);
  }, [focusSeq, focusId, focusOn]);

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
    const showLabel = node.id === selectedId || node.id === hoverId || (active && near.has(node.id))
      || scale >= (big ? 2.6 : 1.3) || r * scale >= 16;
    if (showLabel) {
      const fontSize = Math.max(11 / scale, 1.5);
      ctx.font = `${node.id === selectedId ? "600 " : ""}${fontSize}px Inter, system-ui, sans-serif`;
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      ctx.lineWidth = 3 / scale;
      ctx.strokeStyle = "rgba(255,255,255,0.9)";
      ctx.strokeText(node.label, node.x, node.y + r + 1.5);
      ctx.fillStyle = node.pending ? "#60646c" : "#1c2024";
      ctx.fillText(node.label, node.x, node.y + r + 1.5);
    }
    ctx.globalAlpha = 1;
  }, [active, near, selectedId, hoverId, big]);

  const drawLinkLabel = useCallback((link, ctx, scale) => {
    const s = link.source;
    const t = link.target;
    if (typeof s !== "object" || typeof t !== "object" || s.x === undefined) return;
    const touches = active && (s.id === active || t.id === active);
    if (!(touches || scale >= (big ? 5 : 3.2))) return;
    const fontSize = Math.max(9 / scale, 1.2);
    ctx.font = `${fontSize}px Inter, system-ui, sans-serif`;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    const x = (s.x + t.x) / 2;
    const y = (s.y + t.y) / 2;
    ctx.lineWidth = 3 / scale;
    ctx.strokeStyle = "rgba(255,255,255,0.95)";
    ctx.strokeText(link.label || link.type, x, y);
    ctx.fillStyle = link.pending ? PENDING : "#3e63dd";
    ctx.fillText(link.label || link.type, x, y);
  }, [active, big]);

  const linkTouches = (l) => active && (endId(l.source) === active || endId(l.target) === active);

  return (
    <div ref={boxRef} className="r42-graph-canvas" style={{ position: "absolute", inset: 0 }}
      onPointerDown={() => { fitted.current = true; }} onWheel={() => { fitted.current = true; }}>
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
          linkCanvasObjectMode={() => "after"}
          linkCanvasObject={drawLinkLabel}
          cooldownTime={big ? 8000 : 5000}
          warmupTicks={still ? (big ? 120 : 300) : big ? 30 : 0}
          cooldownTicks={still ? 0 : Infinity}
          onNodeClick={(n) => onSelect && onSelect(n.id)}
          onNodeHover={(n) => setHoverId(n ? n.id : "")}
          onEngineStop={() => {
            if (!fitted.current && fgRef.current) {
              fitted.current = true;
              fgRef.current.zoomToFit(ms(400), 40);
            }
          }}
          enableNodeDrag={!big}
        />
      )}
    </div>
  );
}
