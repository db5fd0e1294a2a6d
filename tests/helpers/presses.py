"""Press every button of a page, one after another as a person would, in one browser session
per variant (a state the page is put in first: a run picked, a benchmark chosen): every
``st.button`` and form submit button AppTest finds (``at.button``), each once, the buttons
it reveals (a confirmation) as they appear, "confirm" boxes ticked so that the buttons they
guard are enabled, and destructive buttons (``last``, in its order) after the rest."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.helpers.ui import open_page

CONFIRM = "confirm"  # a checkbox whose key holds this guards a button: ticked


@dataclass
class Press:
    page: str
    button: str  # its key, or the label of a form's submit button (it has no key)
    variant: str
    errors: list[str] = field(default_factory=list)  # st.error shown after it
    exception: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)  # processes it started (``after``)
    said: list[str] = field(default_factory=list)  # success, info and warning shown after it


def name(button) -> str:
    """A button's key; a form's submit button by its label (its key is made up)."""
    key = button.key or ""
    return button.label if not key or key.startswith("FormSubmitter:") else key


def _tick_confirmations(at) -> None:
    boxes = [c for c in at.checkbox if c.key and CONFIRM in c.key and not c.value]
    for box in boxes:
        box.check()
    if boxes:
        at.run()


def press_all(page: str, variants, *, project: str | None = None, each_variant=(),
              last=(), settle=None, after=None, limit: int = 60):
    """Press the buttons of ``app_pages/<page>``. ``variants``: (name, setup(at)) pairs;
    each gets a fresh session, and ``setup`` runs again before each press (to put back a
    pick a press changed; False: the variant is gone, e.g. its run was deleted). A button
    is pressed once per page, or once per variant when its name is in ``each_variant``
    (True: every button). ``settle()`` runs before each press (True: it changed what the
    page shows, which is drawn again then), ``after(at, press)`` after it, returning the
    processes the press started. Returns the presses and the buttons seen but never
    enabled."""
    last = list(last)

    def wanted(b, mine: set[str]) -> bool:  # not pressed in this variant, nor on the page
        n = name(b)
        again = each_variant is True or n in each_variant
        return n not in mine and (again or n not in done)

    presses: list[Press] = []
    done: set[str] = set()
    disabled: set[str] = set()
    for variant, setup in variants:
        at = open_page(f"app_pages/{page}", project=project)
        mine: set[str] = set()
        reveals: dict[str, set[str]] = {}
        again_once: set[str] = set()  # revealers pressed a second time

        for _ in range(limit):
            if settle and settle():
                at.run()
            if setup(at) is False:  # the variant is gone (its run deleted)
                break
            _tick_confirmations(at)
            buttons = list(at.button)
            disabled |= {name(b) for b in buttons if b.disabled}
            enabled = [b for b in buttons if not b.disabled]
            # first what is new; then, pressed again, a button that revealed one not pressed
            # yet (a confirmation's other answer); last the ones that take things away
            todo = [b for b in enabled if wanted(b, mine) and name(b) not in last] or \
                [b for b in enabled if name(b) not in again_once and
                 reveals.get(name(b), set()) - mine - done][:1] or \
                sorted((b for b in enabled if wanted(b, mine)), key=lambda b: last.index(name(b)))
            if not todo:
                break
            button = todo[0]
            if name(button) in mine:
                again_once.add(name(button))
            shown, errors = {name(b) for b in buttons}, {str(e.value) for e in at.error}
            press = Press(page, name(button), variant)
            button.click().run()
            press.exception = [str(e.value) for e in at.exception]
            press.errors = [str(e.value) for e in at.error if str(e.value) not in errors]
            press.said = [str(e.value) for kind in ("success", "info", "warning")
                          for e in getattr(at, kind)]
            reveals.setdefault(press.button, set()).update({name(b) for b in at.button} - shown)
            mine.add(press.button)
            done.add(press.button)
            presses.append(press)
            if after:
                press.started = after(at, press) or []
    return presses, sorted(disabled - done)
