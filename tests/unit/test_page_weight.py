"""What every page makes the browser load: no icon is named at run time.

`rx.icon` given a name that is a state var (`rx.icon(rx.cond(open, "x", "list"))`) compiles to lucide's
DynamicIcon, and the build then bundles lucide's map of every icon it has (~1,900 entries) into the pages' shared
scripts, with each icon the app draws split into a file of its own: every page load of every reader fetched 54 more
files and 274 KB more script (80 KB over the wire) for the one toggle that used it (`python -m bench page-weight`).
Two icons under a cond draw the same and load two icons."""

import pytest

from r42_app.pages import learn
from r42_app.r42_app import PAGE_PARTS, titled


def dynamic_icons(component) -> list[str]:
    return [lib for lib, imports in component._get_all_imports().items() for i in imports if i.tag == "DynamicIcon"]


@pytest.mark.parametrize("route", [*sorted(PAGE_PARTS), "404"])
def test_no_page_names_an_icon_at_run_time(route):
    component = learn.not_found_page if route == "404" else PAGE_PARTS[route][0]
    assert dynamic_icons(titled(component, route, "R42")()) == []


def test_the_check_sees_an_icon_named_at_run_time():
    import reflex as rx

    from r42_app.state.learn import LearnState

    assert dynamic_icons(rx.box(rx.icon(rx.cond(LearnState.show_topics, "x", "list")))) != []
    assert dynamic_icons(rx.box(rx.cond(LearnState.show_topics, rx.icon("x"), rx.icon("list")))) == []
