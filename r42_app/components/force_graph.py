"""The knowledge-graph canvas: our R42Graph React component (r42_graph.jsx) around
react-force-graph-2d, loaded in the browser only (it needs `window`)."""

import reflex as rx

FORCE_GRAPH = "react-force-graph-2d@1.29.1"


class R42Graph(rx.NoSSRComponent):
    """Force-directed graph of nodes and links; see r42_graph.jsx for the props."""

    library = rx.asset("r42_graph.jsx", shared=True).importable_path
    lib_dependencies: list[str] = [FORCE_GRAPH]
    tag = "R42Graph"

    nodes: rx.Var[list[dict]]
    links: rx.Var[list[dict]]
    focus_id: rx.Var[str]
    focus_seq: rx.Var[int]
    selected_id: rx.Var[str]
    on_select: rx.EventHandler[lambda node_id: [node_id]]


r42_graph = R42Graph.create
