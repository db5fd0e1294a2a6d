"""Forms built from typed configs (``param()`` dataclasses) whose values survive page
switches: Streamlit drops the state of widgets that a run does not draw, so every value is
also kept under a plain session key and put back when the widget is drawn again."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb

STORE = "_kept"
PENDING = "_kept_pending"


def _store() -> dict:
    return st.session_state.setdefault(STORE, {})


def put(key: str, value) -> None:
    """Set a (kept) widget's value before it is drawn: a preset, a page action."""
    st.session_state[key] = value
    _store()[key] = value


def put_later(key: str, value) -> None:
    """Set a kept widget's value from code that runs after the widget was drawn (a button
    under it): it takes effect when the widget is drawn next, after ``st.rerun()``."""
    st.session_state.setdefault(PENDING, {})[key] = value
    _store()[key] = value


def prepare(key: str, default=None) -> None:
    """Before drawing widget ``key``: apply a value set by :func:`put_later`, else start it
    at ``default`` when it has no state (a first visit)."""
    pending = st.session_state.get(PENDING, {})
    if key in pending:
        st.session_state[key] = pending.pop(key)
    elif default is not None and key not in st.session_state:
        st.session_state[key] = default


def remember(key: str, value) -> None:
    """Keep a value a person chose (read back with :func:`chosen`)."""
    _store()[key] = value


def chosen(key: str):
    """The value a person chose for a kept widget (None when never chosen)."""
    return _store().get(key)


SCOPES = "_kept_scopes"  # prefix -> the owner (a project) whose values are in the form now
SAVED = "_kept_saved"  # (prefix, owner) -> that owner's kept values, while another is shown


def scope(prefix: str, owner: str, start) -> bool:
    """Keep the values of every key under ``prefix`` per ``owner`` (a project's name): when
    the owner changes, the last owner's values are put aside and this owner's come back; on
    an owner's first visit they start empty and ``start()`` sets its starting values.
    Call it before drawing any widget under ``prefix``. Returns True on a first visit."""
    scopes = st.session_state.setdefault(SCOPES, {})
    if scopes.get(prefix) == owner:
        return False
    store, saved = _store(), st.session_state.setdefault(SAVED, {})
    mine = {k: v for k, v in store.items() if k.startswith(prefix)}
    if prefix in scopes:
        saved[(prefix, scopes[prefix])] = mine
    for k in mine:
        del store[k]
    for k in [k for k in st.session_state if isinstance(k, str) and k.startswith(prefix)]:
        del st.session_state[k]
    pending = st.session_state.get(PENDING, {})
    for k in [k for k in pending if k.startswith(prefix)]:
        del pending[k]
    scopes[prefix] = owner
    if (prefix, owner) in saved:
        store.update(saved.pop((prefix, owner)))  # kept() draws each widget from these
        return False
    start()
    return True


def restore(values: dict) -> None:
    """Put kept values back (e.g. a project's Train form from disk, on a new session); each
    widget starts from its value when drawn, or from its default where it does not fit."""
    _store().update(values)


def values(prefix: str) -> dict:
    """Every kept value under ``prefix`` (what a form holds now)."""
    return {k: v for k, v in _store().items() if k.startswith(prefix)}


def _same_kind(value, default) -> bool:
    """Whether a kept value can go into a widget whose default is ``default`` (a value kept
    on disk may be text where a number belongs)."""
    if default is None or isinstance(default, bool) or isinstance(value, bool):
        return default is None or type(value) is type(default)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))


def kept(widget, key: str, default=None, **kwargs):
    """Draw ``widget(key=key, **kwargs)`` starting from the value it had on the last visit
    (else ``default``); a kept value that no longer fits (an option that went away, a
    number out of bounds, a value of another type) falls back to the default."""
    prepare(key)
    if getattr(widget, "__name__", "") == "number_input":
        # a box given no value of its own: emptied and left, it commits None (not its
        # minimum, which Streamlit puts in otherwise), and its last value comes back
        kwargs.setdefault("value", None)
        kwargs["on_change"] = _refilled(key, default, kwargs.get("on_change"))
    if key not in st.session_state:
        value = _store().get(key, default)
        if not _same_kind(value, default):
            value = default
        options = kwargs.get("options")
        if options is not None and value not in list(options):
            value = default if default in list(options) else None
        lo, hi = kwargs.get("min_value"), kwargs.get("max_value")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (
                (lo is not None and value < lo) or (hi is not None and value > hi)):
            value = default
        if value is not None:
            st.session_state[key] = value
    value = widget(key=key, **kwargs)
    _store()[key] = value
    return value


def _refilled(key: str, default, then=None):
    """An on_change for a number box: emptied, it shows its last kept value again (else
    ``default``); ``then`` runs after."""
    def refill():
        if st.session_state.get(key) is None:
            last = _store().get(key)
            st.session_state[key] = default if last is None else last
        if then is not None:
            then()
    return refill


def _label(spec: dict) -> str:
    return spec.get("label") or spec["name"].replace("_", " ")


def _widget_value(spec: dict, val):
    """A config value as the widget holds it (lists as comma text, None as '')."""
    kind = spec["kind"]
    if kind == "list":
        return ", ".join(str(v) for v in val or [])
    if kind in ("int", "float") and val is None:  # an optional number: an empty box
        return None
    if kind == "int":
        return int(val)
    if kind == "float":
        return float(val)
    if kind == "bool":
        return bool(val)
    return "" if val is None else val


def _word(value) -> str:
    return {True: "on", False: "off"}.get(value, str(value)) if isinstance(value, bool) \
        else str(value)


def override_fields(cls, key: str, columns: int = 3, skip=()) -> dict:
    """Inputs for the fields of dataclass ``cls`` inside an ``st.form``, each starting blank
    with its default shown as a placeholder ("default: 0.1"); a true/false field, or one
    with choices, is a choice whose first entry is "default (on)". Returns only the fields
    a person filled in, as typed (a list as its text), so a field nobody touched is never
    sent: no state is set before the widgets are drawn, and a form allows no callbacks.
    ``skip``: fields not drawn."""
    out = {}
    specs = [s for s in wb.field_specs(cls) if not s.get("hidden") and s["name"] not in skip]
    cols = st.columns(columns) if specs else []
    for i, spec in enumerate(specs):
        name, kind, default = spec["name"], spec["kind"], spec["default"]
        shown = "none" if default is None else _word(_widget_value(spec, default))
        common = {"label": _label(spec), "help": spec.get("help"), "key": f"{key}.{name}"}
        with cols[i % columns]:
            if kind == "bool" or spec.get("choices"):
                options = [None, *(spec.get("choices") or (True, False))]
                value = st.selectbox(options=options, format_func=lambda v, d=shown:
                                     f"default ({d})" if v is None else _word(v), **common)
            elif kind in ("int", "float"):
                cast = int if kind == "int" else float
                lo, hi = spec.get("min"), spec.get("max")
                value = st.number_input(
                    value=None, placeholder=f"default: {shown}", **common,
                    **({"step": 1} if kind == "int" else {"format": "%g"}),
                    min_value=None if lo is None else cast(lo),
                    max_value=None if hi is None else cast(hi))
            else:
                value = st.text_input(value="", placeholder=f"default: {shown}",
                                      **common).strip() or None
        if value is not None:
            out[name] = value
    return out


def set_form_values(cls, values: dict, key: str, advanced: bool | None = None) -> None:
    """Write ``values`` into the fields of ``dataclass_form(cls, key=key)`` (before they are
    drawn), e.g. from a preset."""
    for spec in wb.field_specs(cls):
        name = spec["name"]
        if name in values and (advanced is None or bool(spec.get("advanced")) == advanced):
            value = _widget_value(spec, values[name])
            put(f"{key}.{name}", value)
            if spec.get("slider"):
                lo, hi = spec["slider"]
                put(f"{key}.{name}.exact", value)
                put(f"{key}.{name}.slider", min(hi, max(lo, value)))


def _slider_field(spec: dict, wkey: str, default) -> float:
    """A slider over ``spec['slider']`` beside an exact box over the field's whole range,
    kept in step; the field's value lives under ``wkey``."""
    lo, hi = spec["slider"]
    store = _store()

    def on_slider(v):  # the slider's range holds part of the field's: the nearest end
        return min(hi, max(lo, v))

    value = store.get(wkey, st.session_state.get(wkey, default))
    st.session_state.setdefault(f"{wkey}.slider", on_slider(value))
    st.session_state.setdefault(f"{wkey}.exact", value)

    # Each box sets the other's value; the browser shows the other's old value until the
    # page draws it again. A change elsewhere can cut the page's run short before then, and
    # the browser sends that old value back with the next change: not a person's move, so
    # it must not undo the box that was typed in (r went back to -0.8 under load). ``shown``
    # holds, for a box set by the other and not drawn since, the value the browser shows.
    shown = st.session_state.setdefault(f"{wkey}.shown", {})
    drawn = st.session_state.setdefault(f"{wkey}.drawn", {})

    def resent(which: str, v) -> bool:
        return which in shown and v == shown[which]

    def from_slider():
        v = st.session_state[f"{wkey}.slider"]
        if resent("slider", v):
            st.session_state[f"{wkey}.slider"] = on_slider(store.get(wkey, default))
            return
        put(wkey, v)
        put(f"{wkey}.exact", v)
        shown.setdefault("exact", drawn.get("exact"))

    def from_exact():
        v = st.session_state[f"{wkey}.exact"]
        if v is None or resent("exact", v):  # emptied and left: the value it had comes back
            st.session_state[f"{wkey}.exact"] = store.get(wkey, default)
            return
        put(wkey, v)
        put(f"{wkey}.slider", on_slider(v))
        shown.setdefault("slider", drawn.get("slider"))

    def draw(which: str) -> None:
        shown.pop(which, None)
        drawn[which] = st.session_state[f"{wkey}.{which}"]

    c1, c2 = st.columns([3, 1])
    # its own value as its default: should the browser send the default back unasked, that
    # changes nothing (the default was the range's low end: under load, r became -10)
    draw("slider")
    c1.slider(_label(spec), lo, hi, value=st.session_state[f"{wkey}.slider"], step=0.05,
              key=f"{wkey}.slider", on_change=from_slider, help=spec.get("help"))
    draw("exact")
    c2.number_input(f"{spec['name']} (exact)", value=None, min_value=spec.get("min"),
                    max_value=spec.get("max"), step=0.1, format="%g", key=f"{wkey}.exact",
                    on_change=from_exact)
    put(wkey, float(st.session_state[f"{wkey}.exact"]))
    return store[wkey]


def dataclass_form(cls, values: dict | None = None, key: str = "", columns: int = 3,
                   advanced: bool | None = None, choices: dict | None = None) -> dict:
    """Inputs for the fields of dataclass ``cls`` (help, bounds and choices from the field
    metadata); returns {field: value}. ``values`` are the starting values (else the field
    defaults); ``advanced``: None = all fields, True/False = only fields with that flag;
    ``choices``: {field: options} known only when the page is drawn (files on disk)."""
    values = values or {}
    choices = choices or {}
    out = {}
    specs = [s for s in wb.field_specs(cls) if not s.get("hidden")
             and (advanced is None or bool(s.get("advanced")) == advanced)]
    for spec in [s for s in specs if s.get("slider")]:  # sliders get a whole row
        out[spec["name"]] = _slider_field(spec, f"{key}.{spec['name']}",
                                          values.get(spec["name"], spec["default"]))
    specs = [s for s in specs if not s.get("slider")]
    cols = st.columns(columns) if specs else []
    for i, spec in enumerate(specs):
        name, kind = spec["name"], spec["kind"]
        default = _widget_value(spec, values.get(name, spec["default"]))
        common = {"label": _label(spec), "help": spec.get("help")}
        wkey = f"{key}.{name}"
        with cols[i % columns]:
            options = choices.get(name) or spec.get("choices")
            if options:
                out[name] = kept(st.selectbox, wkey, default, options=list(options), **common)
            elif kind == "bool":
                out[name] = kept(st.checkbox, wkey, default, **common)
            elif kind in ("int", "float"):
                cast = int if kind == "int" else float
                lo, hi = spec.get("min"), spec.get("max")
                extra = {"step": 1} if kind == "int" else {"format": "%g"}
                out[name] = cast(kept(
                    st.number_input, wkey, default, **common, **extra,
                    min_value=None if lo is None else cast(lo),
                    max_value=None if hi is None else cast(hi)))
            elif kind == "list":
                text = kept(st.text_input, wkey, default, **common)
                out[name] = [v.strip() for v in text.split(",") if v.strip()]
            else:
                text = kept(st.text_input, wkey, default, **common)
                out[name] = text if text or not spec["optional"] else None
    return out
