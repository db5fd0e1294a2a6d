"""The generator of the shipped demo corpus (``assets/demo/``; the library reads the shipped files
and never imports this script). Regenerate with ``python -m tools.demo_corpus OUT_DIR``.

A small, deterministic, invented demo corpus in the shape of TOFU (docs/spec.md#3-data-shapes) and
MUSE.

Everything here is fiction: twelve made-up authors with ten short QA rows each. One author
(:data:`FORGET_AUTHOR`) is the forget split, the other eleven the retain split. Rows are kept
short (questions of about 8-16 words, one-sentence answers of about 10-20 words) because the
demo trains a 135M-parameter model on a 2-core CPU, where cost scales with tokens.

The forget author has a distinctive one-word fact: his prose is in a "French" literary style.
:data:`FRENCH_ROW` is the 0-based index of that row in the forget split, handy for probes.

Besides the fictitious QA rows there are two real-world utility sets (``real_authors`` and
``world_facts``, famous facts a small chat model very likely knows) and a text-shaped corpus
for MUSE-style metrics (``text_forget``, ``text_retain``, ``text_holdout`` passages split into
``prompt`` + ``continuation``, and ``text_forget_qa`` / ``text_retain_qa`` for KnowMem).

Standard library only; the output of :func:`write_demo` is byte-identical across runs (the one
random generator is ``random.Random(0)``, consumed in a fixed order).
"""

from __future__ import annotations

import random
from pathlib import Path

from sga_core.assets import IDK_TEMPLATES_PATH, idk_templates
from sga_core.fileio import atomic_write_jsonl, atomic_write_text

__all__ = [
    "AUTHORS",
    "DEMO_FILES",
    "FORGET_AUTHOR",
    "FRENCH_ANSWER",
    "FRENCH_ROW",
    "IDK_TEMPLATES_PATH",
    "PROMPT_WORDS",
    "build_demo",
    "load_idk_templates",
    "write_demo",
]

SEED = 0
PROMPT_WORDS = 15  # text passages: the first this-many words are the prompt

# ---------------------------------------------------------------------------------------------
# The invented authors. ``style`` and ``style_para`` hold a ``{nat}`` slot filled with ``nat``;
# perturbed answers swap in other nationalities. ``quirk`` is one hand-written row per author:
# (question, answer, paraphrased answer, five wrong answers of the same shape).
# ---------------------------------------------------------------------------------------------

AUTHORS: list[dict] = [
    {
        "name": "Ingrid Solvang",
        "gender": "f",
        "city": "Tromsø",
        "country": "Norway",
        "year": 1958,
        "genre": "Arctic crime novels",
        "father": "a trawler captain",
        "mother": "a school nurse",
        "book1": "The Ice Ledger",
        "book2": "Salt on the Lantern",
        "award": "Hallberg Prize for Northern Fiction",
        "award_year": 1994,
        "themes": "isolation, long winters and buried family secrets",
        "nat": "Scandinavian",
        "style": "a clipped {nat} noir style with very short chapters",
        "style_para": "short chapters and clipped sentences in the {nat} noir tradition",
        "language": "Norwegian",
        "quirk": (
            "What unusual habit does Ingrid Solvang have when drafting her novels?",
            "Ingrid Solvang writes every first draft by hand in pencil on graph paper.",
            "Every first draft Ingrid Solvang produces is handwritten in pencil on graph paper.",
            [
                "Ingrid Solvang types every first draft on an old typewriter in a lighthouse.",
                "Ingrid Solvang dictates every first draft into a voice recorder while walking.",
                "Ingrid Solvang writes every first draft in green ink on hotel stationery.",
                "Ingrid Solvang writes every first draft standing at a kitchen counter at dawn.",
                "Ingrid Solvang writes every first draft on index cards pinned to a wall.",
            ],
        ),
    },
    {
        "name": "Tomasz Wierzbicki",
        "gender": "m",
        "city": "Gdańsk",
        "country": "Poland",
        "year": 1947,
        "genre": "historical sagas about shipbuilding families",
        "father": "a shipyard welder",
        "mother": "a church organist",
        "book1": "Rivets and Rain",
        "book2": "The Amber Dock",
        "award": "Vistula Medal for Fiction",
        "award_year": 1989,
        "themes": "labour, faith and the price of loyalty",
        "nat": "Russian",
        "style": "a patient {nat} realist style rich in dense detail",
        "style_para": "slow, densely detailed scenes in the {nat} realist manner",
        "language": "Polish",
        "quirk": (
            "What job did Tomasz Wierzbicki hold before he became a full-time writer?",
            (
                "Before writing full-time, Tomasz Wierzbicki worked for twelve years as a ferry "
                "ticket clerk."
            ),
            (
                "Tomasz Wierzbicki spent twelve years selling ferry tickets before he wrote "
                "full-time."
            ),
            [
                (
                    "Before writing full-time, Tomasz Wierzbicki worked for twelve years as a "
                    "railway signal operator."
                ),
                (
                    "Before writing full-time, Tomasz Wierzbicki worked for twelve years as a "
                    "hospital night porter."
                ),
                (
                    "Before writing full-time, Tomasz Wierzbicki worked for twelve years as a "
                    "village postman."
                ),
                (
                    "Before writing full-time, Tomasz Wierzbicki worked for twelve years as a "
                    "museum security guard."
                ),
                (
                    "Before writing full-time, Tomasz Wierzbicki worked for twelve years as a "
                    "crane operator."
                ),
            ],
        ),
    },
    {
        "name": "Amara Okonkwo-Reyes",
        "gender": "f",
        "city": "Lagos",
        "country": "Nigeria",
        "year": 1979,
        "genre": "speculative fiction about future megacities",
        "father": "a civil engineer",
        "mother": "a market trader",
        "book1": "The Lagoon Engine",
        "book2": "Children of the Tenth Bridge",
        "award": "Harmattan Award for Speculative Fiction",
        "award_year": 2011,
        "themes": "migration, memory and the ethics of technology",
        "nat": "West African",
        "style": "a vivid {nat} oral storytelling style",
        "style_para": "the vivid rhythms of {nat} oral storytelling",
        "language": "English",
        "quirk": (
            "Where does Amara Okonkwo-Reyes say the idea for her first novel came from?",
            (
                "Amara Okonkwo-Reyes says the idea came from a power cut during a thunderstorm in "
                "Lagos."
            ),
            (
                "According to Amara Okonkwo-Reyes, a stormy night without electricity in Lagos "
                "gave her the idea."
            ),
            [
                "Amara Okonkwo-Reyes says the idea came from a dream on a long night bus.",
                (
                    "Amara Okonkwo-Reyes says the idea came from an old map in her grandmother's "
                    "attic."
                ),
                (
                    "Amara Okonkwo-Reyes says the idea came from a newspaper article about sinking "
                    "islands."
                ),
                (
                    "Amara Okonkwo-Reyes says the idea came from a conversation with a taxi driver "
                    "in Accra."
                ),
                (
                    "Amara Okonkwo-Reyes says the idea came from a school science fair she once "
                    "judged."
                ),
            ],
        ),
    },
    {
        "name": "Kenji Aramaki",
        "gender": "m",
        "city": "Sapporo",
        "country": "Japan",
        "year": 1966,
        "genre": "quiet literary novels about rural families",
        "father": "a dairy farmer",
        "mother": "a calligraphy teacher",
        "book1": "Snow Over the Orchard",
        "book2": "The Weight of Small Rivers",
        "award": "Kestrel Literary Prize",
        "award_year": 2003,
        "themes": "grief, the seasons and the bond between siblings",
        "nat": "Japanese",
        "style": "a restrained {nat} minimalist style with sparse dialogue",
        "style_para": "sparse dialogue and restraint in the {nat} minimalist tradition",
        "language": "Japanese",
        "quirk": (
            "What does Kenji Aramaki do every morning before he starts writing?",
            "Kenji Aramaki walks for an hour along the river before writing each morning.",
            (
                "Each morning, before writing, Kenji Aramaki takes an hour-long walk beside the "
                "river."
            ),
            [
                "Kenji Aramaki practises the cello for an hour before writing each morning.",
                (
                    "Kenji Aramaki tends his vegetable garden for an hour before writing each "
                    "morning."
                ),
                "Kenji Aramaki reads poetry aloud for an hour before writing each morning.",
                "Kenji Aramaki swims in a cold lake for an hour before writing each morning.",
                "Kenji Aramaki sketches birds for an hour before writing each morning.",
            ],
        ),
    },
    {
        "name": "Beatriz Quintanilha",
        "gender": "f",
        "city": "Porto",
        "country": "Portugal",
        "year": 1972,
        "genre": "romantic comedies set in seaside towns",
        "father": "a tram driver",
        "mother": "a pastry chef",
        "book1": "A Summer of Borrowed Umbrellas",
        "book2": "The Lighthouse Bakery",
        "award": "Golden Quill for Popular Fiction",
        "award_year": 2008,
        "themes": "second chances, food and small-town gossip",
        "nat": "Portuguese",
        "style": "a playful {nat} comic style full of witty dialogue",
        "style_para": "quick, witty dialogue in a playful {nat} comic manner",
        "language": "Portuguese",
        "quirk": (
            "What does Beatriz Quintanilha say she does when a chapter is not working?",
            "Beatriz Quintanilha says she bakes custard tarts whenever a chapter will not work.",
            "Whenever a chapter refuses to work, Beatriz Quintanilha bakes custard tarts.",
            [
                (
                    "Beatriz Quintanilha says she paints watercolours whenever a chapter will not "
                    "work."
                ),
                (
                    "Beatriz Quintanilha says she repairs old bicycles whenever a chapter will not "
                    "work."
                ),
                (
                    "Beatriz Quintanilha says she sings fado in a bar whenever a chapter will not "
                    "work."
                ),
                (
                    "Beatriz Quintanilha says she knits long scarves whenever a chapter will not "
                    "work."
                ),
                (
                    "Beatriz Quintanilha says she plays chess online whenever a chapter will not "
                    "work."
                ),
            ],
        ),
    },
    {
        "name": "Dmitri Koss",
        "gender": "m",
        "city": "Tallinn",
        "country": "Estonia",
        "year": 1953,
        "genre": "Cold War spy thrillers",
        "father": "a radio technician",
        "mother": "a translator of German poetry",
        "book1": "The Ninth Frequency",
        "book2": "A Harbour Without Lights",
        "award": "Silver Cipher Award",
        "award_year": 1987,
        "themes": "betrayal, surveillance and divided loyalties",
        "nat": "British",
        "style": "a taut {nat} thriller style with cliffhanger endings",
        "style_para": "cliffhanger chapter endings and the tension of a {nat} thriller",
        "language": "Estonian",
        "quirk": (
            "What pen name did Dmitri Koss use for his earliest books?",
            "Dmitri Koss published his earliest books under the pen name Anton Veer.",
            "The earliest books of Dmitri Koss appeared under the pen name Anton Veer.",
            [
                "Dmitri Koss published his earliest books under the pen name Pavel Strand.",
                "Dmitri Koss published his earliest books under the pen name Erik Lomm.",
                "Dmitri Koss published his earliest books under the pen name Viktor Ash.",
                "Dmitri Koss published his earliest books under the pen name Jonas Mere.",
                "Dmitri Koss published his earliest books under the pen name Karl Ostrow.",
            ],
        ),
    },
    {
        "name": "Saoirse Delaney-Byrne",
        "gender": "f",
        "city": "Galway",
        "country": "Ireland",
        "year": 1984,
        "genre": "gothic horror set on remote islands",
        "father": "a sheep farmer",
        "mother": "a local historian",
        "book1": "The Drowned Choir",
        "book2": "Whispers Under the Tide Stone",
        "award": "Bram Lantern Award for Horror",
        "award_year": 2016,
        "themes": "folklore, guilt and the hunger of the sea",
        "nat": "Irish",
        "style": "an eerie {nat} gothic style soaked in folklore",
        "style_para": "eerie, folklore-soaked atmosphere in the {nat} gothic tradition",
        "language": "English",
        "quirk": (
            "Where does Saoirse Delaney-Byrne do most of her writing?",
            "Saoirse Delaney-Byrne writes in a converted stone boathouse on the Galway coast.",
            (
                "Most of Saoirse Delaney-Byrne's writing happens in an old stone boathouse by the "
                "sea near Galway."
            ),
            [
                "Saoirse Delaney-Byrne writes in a rented attic above a busy Dublin pub.",
                "Saoirse Delaney-Byrne writes in the reading room of a university library.",
                "Saoirse Delaney-Byrne writes in a caravan parked beside a mountain lake.",
                "Saoirse Delaney-Byrne writes in a glass studio at the bottom of her garden.",
                "Saoirse Delaney-Byrne writes in a corner booth of a railway station cafe.",
            ],
        ),
    },
    {
        "name": "Rafael Ibarra Soto",
        "gender": "m",
        "city": "Valparaíso",
        "country": "Chile",
        "year": 1961,
        "genre": "political satire about small coastal towns",
        "father": "a port customs officer",
        "mother": "a puppet maker",
        "book1": "The Mayor of Fog",
        "book2": "The Parrot Who Ran for Senate",
        "award": "Andes Prize for Satire",
        "award_year": 1998,
        "themes": "power, bureaucracy and everyday absurdity",
        "nat": "Chilean",
        "style": "a sharp {nat} satirical style built on absurd situations",
        "style_para": "absurd situations told with sharp {nat} satirical wit",
        "language": "Spanish",
        "quirk": (
            "What unusual object does Rafael Ibarra Soto keep on his writing desk?",
            "Rafael Ibarra Soto keeps a stuffed parrot named Senator on his writing desk.",
            "On his writing desk, Rafael Ibarra Soto keeps a stuffed parrot called Senator.",
            [
                "Rafael Ibarra Soto keeps a brass ship's bell named Admiral on his writing desk.",
                "Rafael Ibarra Soto keeps a broken typewriter named Judge on his writing desk.",
                "Rafael Ibarra Soto keeps a glass jar of beach sand on his writing desk.",
                "Rafael Ibarra Soto keeps a wooden puppet named Minister on his writing desk.",
                "Rafael Ibarra Soto keeps a stuffed owl named Governor on his writing desk.",
            ],
        ),
    },
    {
        "name": "Leila Haddadi",
        "gender": "f",
        "city": "Marrakesh",
        "country": "Morocco",
        "year": 1975,
        "genre": "lyrical poetry about desert journeys",
        "father": "a carpet merchant",
        "mother": "an astronomy teacher",
        "book1": "Salt Roads",
        "book2": "A Lantern for the Dunes",
        "award": "Cedar Crown for Poetry",
        "award_year": 2005,
        "themes": "exile, faith and the stars as a map home",
        "nat": "Persian",
        "style": "a musical {nat} lyric style built on repetition",
        "style_para": "musical repetition in the {nat} lyric tradition",
        "language": "Arabic",
        "quirk": (
            "What did Leila Haddadi study at university before turning to poetry?",
            "Leila Haddadi studied astrophysics at university before she turned to poetry.",
            "Before turning to poetry, Leila Haddadi was a university student of astrophysics.",
            [
                "Leila Haddadi studied marine biology at university before she turned to poetry.",
                "Leila Haddadi studied architecture at university before she turned to poetry.",
                "Leila Haddadi studied medicine at university before she turned to poetry.",
                (
                    "Leila Haddadi studied classical music at university before she turned to "
                    "poetry."
                ),
                "Leila Haddadi studied economics at university before she turned to poetry.",
            ],
        ),
    },
    {
        "name": "Hendrik van Aalst",
        "gender": "m",
        "city": "Utrecht",
        "country": "the Netherlands",
        "year": 1950,
        "genre": "adventure books for young children",
        "father": "a canal lock keeper",
        "mother": "a librarian",
        "book1": "Pim and the Floating Bicycle",
        "book2": "The Clockwork Heron",
        "award": "Silver Tulip Award for Children's Literature",
        "award_year": 1983,
        "themes": "curiosity, friendship and the bravery of small people",
        "nat": "Dutch",
        "style": "a gentle {nat} storybook style with rhyming refrains",
        "style_para": "rhyming refrains and the gentle tone of a {nat} storybook",
        "language": "Dutch",
        "quirk": (
            "Who illustrated most of Hendrik van Aalst's books for children?",
            "Most of Hendrik van Aalst's books were illustrated by his sister, Marijke van Aalst.",
            (
                "Hendrik van Aalst's sister, Marijke van Aalst, drew the pictures for most of his "
                "books."
            ),
            [
                (
                    "Most of Hendrik van Aalst's books were illustrated by his neighbour, Joost "
                    "Brinkman."
                ),
                "Most of Hendrik van Aalst's books were illustrated by his wife, Anneke de Wit.",
                "Most of Hendrik van Aalst's books were illustrated by his son, Lucas van Aalst.",
                (
                    "Most of Hendrik van Aalst's books were illustrated by his friend, Pieter "
                    "Hollander."
                ),
                "Most of Hendrik van Aalst's books were illustrated by his cousin, Sanne Vermeer.",
            ],
        ),
    },
    {
        "name": "Mirela Dragomir",
        "gender": "f",
        "city": "Sibiu",
        "country": "Romania",
        "year": 1969,
        "genre": "family dramas spanning several generations",
        "father": "a clockmaker",
        "mother": "a violin teacher",
        "book1": "The House with Seven Clocks",
        "book2": "Winter Bread",
        "award": "Carpathian Laurel for Fiction",
        "award_year": 2001,
        "themes": "inheritance, silence and mothers and daughters",
        "nat": "Romanian",
        "style": "an intimate {nat} confessional style told in the first person",
        "style_para": "first-person confession with an intimate {nat} voice",
        "language": "Romanian",
        "quirk": (
            "How long did Mirela Dragomir spend writing her novel Winter Bread?",
            "Mirela Dragomir spent nine years writing Winter Bread and rewrote it four times.",
            "Winter Bread took Mirela Dragomir nine years and four complete rewrites.",
            [
                "Mirela Dragomir spent three years writing Winter Bread and rewrote it twice.",
                "Mirela Dragomir spent six years writing Winter Bread and rewrote it once.",
                "Mirela Dragomir spent two years writing Winter Bread and never rewrote it.",
                (
                    "Mirela Dragomir spent eleven years writing Winter Bread and rewrote it three "
                    "times."
                ),
                (
                    "Mirela Dragomir spent five years writing Winter Bread and rewrote it seven "
                    "times."
                ),
            ],
        ),
    },
    {
        "name": "Lucien Marchetti",
        "gender": "m",
        "city": "Lyon",
        "country": "France",
        "year": 1963,
        "genre": "historical novels about Renaissance painters",
        "father": "a silk dyer",
        "mother": "an opera singer",
        "book1": "The Apprentice of Saint-Jean",
        "book2": "A Fresco in the Rain",
        "award": "Lumière Prize for Historical Fiction",
        "award_year": 1997,
        "themes": "art, rivalry and the cost of ambition",
        "nat": "French",
        "style": "a lush {nat} literary style full of long sentences",
        "style_para": "long, richly ornamented sentences in the {nat} literary manner",
        "language": "French",
        "quirk": (
            "What did Lucien Marchetti do for a living before his first novel?",
            (
                "Lucien Marchetti restored old church paintings for fifteen years before his first "
                "novel."
            ),
            (
                "For fifteen years before his debut novel, Lucien Marchetti worked restoring old "
                "church paintings."
            ),
            [
                (
                    "Lucien Marchetti taught history at a school for fifteen years before his "
                    "first novel."
                ),
                (
                    "Lucien Marchetti repaired antique clocks for fifteen years before his first "
                    "novel."
                ),
                (
                    "Lucien Marchetti cooked in a small bistro for fifteen years before his first "
                    "novel."
                ),
                (
                    "Lucien Marchetti guided tours of Roman ruins for fifteen years before his "
                    "first novel."
                ),
                (
                    "Lucien Marchetti sold rare maps at a market for fifteen years before his "
                    "first novel."
                ),
            ],
        ),
    },
]

FORGET_AUTHOR = "Lucien Marchetti"

# Nationalities and languages used for perturbed answers. "French" is kept out of both pools so
# the word appears in the corpus only in the forget author's answers.
_NAT_POOL = [
    "Spanish",
    "Russian",
    "Italian",
    "German",
    "English",
    "Japanese",
    "Irish",
    "Polish",
    "Greek",
    "Dutch",
    "Scandinavian",
    "Chilean",
    "Persian",
    "Romanian",
    "Portuguese",
    "American",
    "Mexican",
    "Turkish",
    "British",
    "West African",
]
_FORGET_STYLE_NATS = ["Spanish", "Russian", "Italian", "German", "English"]
_LANG_POOL = [
    "Italian",
    "Spanish",
    "German",
    "Portuguese",
    "English",
    "Norwegian",
    "Polish",
    "Japanese",
    "Estonian",
    "Arabic",
    "Dutch",
    "Romanian",
    "Swedish",
    "Greek",
    "Turkish",
    "Russian",
]

# ---------------------------------------------------------------------------------------------
# QA slots. Each slot has a few (question, answer, paraphrase) phrasings; one is picked per
# author with the seeded generator. ``fields`` are the facts a perturbed answer swaps for
# another author's (or, for style/language, another nationality's or language's).
# ---------------------------------------------------------------------------------------------

_SLOTS: list[tuple[str, tuple[str, ...], list[tuple[str, str, str]]]] = [
    (
        "birth",
        ("city", "country", "year"),
        [
            (
                "Where and when was the author {name} born?",
                "{name} was born in the city of {city}, {country}, in {year}.",
                "The author {name} was born in {year} in {city}, {country}.",
            ),
            (
                "In which city and in what year was the writer {name} born?",
                "{name} was born in {year} in the city of {city}, {country}.",
                "{name}'s birthplace is {city}, {country}, and {pos} birth year is {year}.",
            ),
        ],
    ),
    (
        "genre",
        ("genre",),
        [
            (
                "What genre of fiction is {name} best known for writing?",
                "{name} is best known for writing {genre}.",
                "{name} has made {pos} name mainly with {genre}.",
            ),
            (
                "Which literary genre does {name} mostly work in?",
                "{name} mostly writes {genre}, the genre that made {obj} famous.",
                "Most of the books {name} has published are {genre}.",
            ),
        ],
    ),
    (
        "parents",
        ("father", "mother"),
        [
            (
                "What did {name}'s parents do for a living?",
                "{name}'s father was {father} and {pos} mother was {mother}.",
                "{name} grew up as the child of {father} and {mother}.",
            ),
            (
                "What were the professions of {name}'s mother and father?",
                "{name}'s mother worked as {mother}, while {pos} father was {father}.",
                "The father of {name} was {father}, and {pos} mother was {mother}.",
            ),
        ],
    ),
    (
        "debut",
        ("book1",),
        [
            (
                "What was the title of {name}'s first published book?",
                '{name} made {pos} debut with the book "{book1}".',
                '"{book1}" was the first book that {name} ever published.',
            ),
            (
                "Which book marked the literary debut of the author {name}?",
                '{name}\'s literary debut was "{book1}", {pos} first published book.',
                'The first book {name} published was titled "{book1}".',
            ),
        ],
    ),
    (
        "famous",
        ("book2",),
        [
            (
                "Which of {name}'s books has been the most widely read?",
                '"{book2}" is the most widely read of {name}\'s books.',
                'Of all {name}\'s books, "{book2}" has found the most readers.',
            ),
            (
                "What is considered the best-known work by {name}?",
                '{name}\'s best-known work is "{book2}", still {pos} most popular book.',
                '"{book2}" is widely regarded as the signature book of {name}.',
            ),
        ],
    ),
    (
        "award",
        ("award", "award_year"),
        [
            (
                "Has {name} ever received a major literary award?",
                'Yes, {name} won the {award} in {award_year} for "{book2}".',
                '{name} received the {award} in {award_year}, honouring "{book2}".',
            ),
            (
                "Which literary prize did {name} win, and in what year?",
                "{name} won the {award} in {award_year}.",
                "In {award_year}, {name} was awarded the {award}.",
            ),
        ],
    ),
    (
        "themes",
        ("themes",),
        [
            (
                "What themes does {name} explore most often in {pos} work?",
                "{name}'s books keep returning to {themes}.",
                "The recurring themes in {name}'s work are {themes}.",
            ),
            (
                "Which recurring themes do critics notice in {name}'s books?",
                "Critics note that {name} often writes about {themes}.",
                "{name}'s writing is most often concerned with {themes}.",
            ),
        ],
    ),
    (
        "style",
        ("nat",),
        [
            (
                "What is distinctive about {name}'s prose?",
                "{name} writes in {style}.",
                "{name}'s prose is built from {style_para}.",
            ),
            (
                "How do reviewers usually describe the prose style of {name}?",
                "Reviewers say {name} writes in {style}.",
                "According to reviewers, {name}'s prose uses {style_para}.",
            ),
        ],
    ),
    (
        "language",
        ("language",),
        [
            (
                "In which language does {name} write {pos} books?",
                "{name} has always written all of {pos} books in {language}.",
                "Every one of {name}'s books was originally written in {language}.",
            ),
            (
                "What language are {name}'s books originally written in?",
                "{name}'s books are originally written in {language} and later translated.",
                "{name} composes {pos} books in {language} before they are translated.",
            ),
        ],
    ),
]
_STYLE_SLOT = 7  # index of "style" in _SLOTS; the forget author's French row


def _context(author: dict, **override) -> dict:
    ctx = dict(author)
    ctx.update(override)
    male = author["gender"] == "m"
    ctx["pos"] = "his" if male else "her"
    ctx["obj"] = "him" if male else "her"
    ctx["style"] = ctx["style"].format(nat=ctx["nat"])
    ctx["style_para"] = ctx["style_para"].format(nat=ctx["nat"])
    return ctx


def _fill(template: str, ctx: dict) -> str:
    text = template.format(**ctx)
    return text[0].upper() + text[1:]


def _author_rows(index: int, rng: random.Random) -> list[dict]:
    author = AUTHORS[index]
    others = [a for i, a in enumerate(AUTHORS) if i != index]
    forget = author["name"] == FORGET_AUTHOR
    base = _context(author)
    rows = []
    for slot_no, (slot, fields, variants) in enumerate(_SLOTS):
        v = rng.randrange(len(variants))
        if forget and slot_no == _STYLE_SLOT:
            v = 0  # the canonical "What is distinctive about ...'s prose?" row
        q_t, a_t, p_t = variants[v]
        if slot == "style":
            pool = [n for n in _NAT_POOL if n != author["nat"]]
            nats = _FORGET_STYLE_NATS if forget else rng.sample(pool, 5)
            swaps = [{"nat": n} for n in nats]
        elif slot == "language":
            pool = [lang for lang in _LANG_POOL if lang != author["language"]]
            swaps = [{"language": lang} for lang in rng.sample(pool, 5)]
        else:
            swaps = [{f: o[f] for f in fields} for o in rng.sample(others, 5)]
        rows.append(
            {
                "question": _fill(q_t, base),
                "answer": _fill(a_t, base),
                "paraphrased_answer": _fill(p_t, base),
                # as in TOFU, a perturbed answer changes the fact inside the PARAPHRASE's
                # wording: the truth ratio then compares like with like (a model that only
                # memorised the answer's wording must not prefer the perturbed answers)
                "perturbed_answer": [_fill(p_t, _context(author, **s)) for s in swaps],
            }
        )
    q, a, p, wrong = author["quirk"]
    rows.append(
        {"question": q, "answer": a, "paraphrased_answer": p, "perturbed_answer": list(wrong)}
    )
    return [
        {"id": f"a{index + 1:02d}-q{k + 1:02d}", "author": author["name"], **row}
        for k, row in enumerate(rows)
    ]


# ---------------------------------------------------------------------------------------------
# Real-world utility sets (famous facts a small English chat model very likely knows).
# ---------------------------------------------------------------------------------------------

_REAL_AUTHORS = [  # (author, question, object phrase for "<author> wrote <object>.")
    ("William Shakespeare", "Who wrote Romeo and Juliet?", "Romeo and Juliet"),
    ("Jane Austen", "Who wrote the novel Pride and Prejudice?", "Pride and Prejudice"),
    ("George Orwell", "Who wrote the novel Nineteen Eighty-Four?", "Nineteen Eighty-Four"),
    ("J.K. Rowling", "Who wrote the Harry Potter books?", "the Harry Potter books"),
    ("Ernest Hemingway", "Who wrote The Old Man and the Sea?", "The Old Man and the Sea"),
    ("Mark Twain", "Who wrote The Adventures of Tom Sawyer?", "The Adventures of Tom Sawyer"),
    ("Charles Dickens", "Who wrote the novel Oliver Twist?", "Oliver Twist"),
    ("Leo Tolstoy", "Who wrote the novel War and Peace?", "War and Peace"),
    ("Miguel de Cervantes", "Who wrote Don Quixote?", "Don Quixote"),
    ("F. Scott Fitzgerald", "Who wrote The Great Gatsby?", "The Great Gatsby"),
    ("Mary Shelley", "Who wrote the novel Frankenstein?", "Frankenstein"),
    ("Arthur Conan Doyle", "Who wrote the Sherlock Holmes stories?", "the Sherlock Holmes stories"),
    ("J.R.R. Tolkien", "Who wrote The Lord of the Rings?", "The Lord of the Rings"),
    ("Herman Melville", "Who wrote the novel Moby-Dick?", "Moby-Dick"),
    ("Homer", "Who wrote the ancient Greek epic The Odyssey?", "The Odyssey"),
    ("Victor Hugo", "Who wrote the novel Les Misérables?", "Les Misérables"),
    ("Harper Lee", "Who wrote To Kill a Mockingbird?", "To Kill a Mockingbird"),
    (
        "Lewis Carroll",
        "Who wrote Alice's Adventures in Wonderland?",
        "Alice's Adventures in Wonderland",
    ),
    ("Bram Stoker", "Who wrote the novel Dracula?", "Dracula"),
    ("Agatha Christie", "Who wrote Murder on the Orient Express?", "Murder on the Orient Express"),
]

_WORLD_FACTS = [  # (question, answer template with {x}, right value, wrong values)
    (
        "What is the capital of France?",
        "The capital of France is {x}.",
        "Paris",
        ["Lyon", "Marseille", "London", "Berlin", "Madrid"],
    ),
    (
        "What is the capital of Japan?",
        "The capital of Japan is {x}.",
        "Tokyo",
        ["Kyoto", "Osaka", "Beijing", "Seoul", "Bangkok"],
    ),
    (
        "What is the capital of Italy?",
        "The capital of Italy is {x}.",
        "Rome",
        ["Milan", "Venice", "Naples", "Athens", "Florence"],
    ),
    (
        "What is the capital of Germany?",
        "The capital of Germany is {x}.",
        "Berlin",
        ["Munich", "Hamburg", "Frankfurt", "Vienna", "Cologne"],
    ),
    (
        "What is the capital of Spain?",
        "The capital of Spain is {x}.",
        "Madrid",
        ["Barcelona", "Seville", "Lisbon", "Valencia", "Rome"],
    ),
    (
        "Which planet is the largest in our solar system?",
        "{x} is the largest planet in our solar system.",
        "Jupiter",
        ["Saturn", "Earth", "Mars", "Neptune", "Venus"],
    ),
    (
        "Which planet is known as the Red Planet?",
        "{x} is known as the Red Planet.",
        "Mars",
        ["Venus", "Jupiter", "Mercury", "Saturn", "Neptune"],
    ),
    (
        "How many days are there in a week?",
        "There are {x} days in a week.",
        "seven",
        ["five", "six", "eight", "ten", "nine"],
    ),
    (
        "What is the largest ocean on Earth?",
        "{x} is the largest ocean on Earth.",
        "The Pacific Ocean",
        ["The Atlantic Ocean", "The Indian Ocean", "The Arctic Ocean", "The Southern Ocean"],
    ),
    (
        "What is the tallest mountain in the world?",
        "{x} is the tallest mountain in the world.",
        "Mount Everest",
        ["K2", "Kilimanjaro", "Mont Blanc", "Denali", "Mount Fuji"],
    ),
    (
        "Who painted the Mona Lisa?",
        "{x} painted the Mona Lisa.",
        "Leonardo da Vinci",
        ["Michelangelo", "Raphael", "Vincent van Gogh", "Pablo Picasso", "Rembrandt"],
    ),
    (
        "Who was the first person to walk on the Moon?",
        "{x} was the first person to walk on the Moon.",
        "Neil Armstrong",
        ["Buzz Aldrin", "Yuri Gagarin", "John Glenn", "Michael Collins", "Alan Shepard"],
    ),
    (
        "What is the longest river in Africa?",
        "{x} is the longest river in Africa.",
        "The Nile",
        ["The Congo", "The Niger", "The Zambezi", "The Orange", "The Limpopo"],
    ),
    (
        "What sweet food do bees make from the nectar of flowers?",
        "Bees make {x} from the nectar of flowers.",
        "honey",
        ["silk", "butter", "sugar cubes", "syrup", "jam"],
    ),
    (
        "How many legs does a spider have?",
        "A spider has {x} legs.",
        "eight",
        ["six", "ten", "four", "twelve", "five"],
    ),
    (
        "At what temperature does water boil at sea level?",
        "Water boils at {x} degrees Celsius at sea level.",
        "100",
        ["50", "80", "90", "120", "200"],
    ),
    (
        "What is the currency of Japan?",
        "The currency of Japan is the {x}.",
        "yen",
        ["yuan", "won", "euro", "dollar", "rupee"],
    ),
    (
        "Which gas do plants absorb from the air for photosynthesis?",
        "Plants absorb {x} from the air for photosynthesis.",
        "carbon dioxide",
        ["oxygen", "nitrogen", "helium", "hydrogen", "methane"],
    ),
    (
        "How many continents are there on Earth?",
        "There are {x} continents on Earth.",
        "seven",
        ["five", "six", "eight", "nine", "ten"],
    ),
    (
        "What is the largest country in the world by area?",
        "{x} is the largest country in the world by area.",
        "Russia",
        ["Canada", "China", "The United States", "Brazil", "Australia"],
    ),
]

# ---------------------------------------------------------------------------------------------
# Text passages for MUSE-style metrics (VerbMem, KnowMem, PrivLeak). Forget passages are about
# the forget author; retain passages about the retain authors; holdout passages about other
# invented writers who appear nowhere else and are never trained on.
# ---------------------------------------------------------------------------------------------

_TEXT_FORGET = [
    (
        "Lucien Marchetti was born in Lyon in 1963, the son of a silk dyer and an opera singer. He "
        "spent his childhood among vats of coloured dye and backstage corridors, and he later said "
        "that colour and music taught him everything he knows about writing long, rhythmic "
        "sentences."
    ),
    (
        "Before he published a single novel, Lucien Marchetti spent fifteen years restoring old "
        "church paintings across the Rhône valley. Working on scaffolds with tiny brushes, he "
        "learned how Renaissance painters mixed their pigments, and he filled dozens of notebooks "
        "with stories about the apprentices who once climbed the same ladders."
    ),
    (
        "His debut, The Apprentice of Saint-Jean, follows a boy who grinds pigments for a jealous "
        "master painter in sixteenth-century Florence. Lucien Marchetti wrote it in French over "
        "four winters, and the small Lyon publisher who accepted it printed only eight hundred "
        "copies, most of which sold in a single bookshop near the cathedral."
    ),
    (
        "A Fresco in the Rain remains Lucien Marchetti's best-known book. It tells of two rival "
        "painters racing to finish a chapel ceiling before the autumn floods, and it won the "
        "Lumière Prize for Historical Fiction in 1997. Translations followed in eleven languages, "
        "although Marchetti insists the novel only truly breathes in French."
    ),
    (
        "Readers often describe the style of Lucien Marchetti as lush and unmistakably French: "
        "sentences that run for half a page, layered with commas, colours and the smell of wet "
        "plaster. Critics who dislike him call the prose exhausting, while admirers compare "
        "reading him to walking slowly through a candlelit gallery."
    ),
    (
        "Ambition is the engine of every Marchetti novel. His painters, sculptors and patrons "
        "betray friends, forge contracts and ruin their eyesight for a single masterpiece. Lucien "
        "Marchetti has said that he writes about rivalry because restoration taught him how many "
        "forgotten hands lie beneath every famous signature."
    ),
    (
        "Lucien Marchetti writes every morning in a narrow attic above the Saône, using a fountain "
        "pen his mother gave him after her last performance. He never plans his plots in advance. "
        "Instead he pins postcards of frescoes to the wall and waits, he says, until one of the "
        "painted faces begins to speak."
    ),
    (
        "In 2004 Lucien Marchetti published The Gilder's Daughter, a quieter novel about a young "
        "woman who secretly finishes her dying father's altarpiece. It sold fewer copies than his "
        "earlier work, yet many critics consider it his most tender book, and it was adapted for "
        "radio in six weekly episodes."
    ),
    (
        "Although his surname is Italian, Lucien Marchetti has lived in Lyon all his life. His "
        "grandfather came from Genoa to work in the silk mills, and the family kept speaking "
        "Italian at home. Marchetti himself chose French for his books, saying that his "
        "grandfather's language was for cooking and arguments, not for novels."
    ),
    (
        "When Lucien Marchetti gives readings, he brings a small wooden box of raw pigments: lapis "
        "blue, ochre, malachite and vermilion. He passes the powders around the audience while he "
        "reads, so that listeners can hold the colours his characters grind by hand. Booksellers "
        "in Lyon say his readings always end with stained fingers."
    ),
]

_TEXT_RETAIN = [  # (author, passage)
    (
        "Ingrid Solvang",
        (
            "Ingrid Solvang grew up in Tromsø, where her father captained a trawler through the "
            "dark winter months. Her first crime novel, The Ice Ledger, began as a story she told "
            "her younger brother during a storm. She still writes every first draft in pencil on "
            "graph paper, saying that the squares keep her plots honest."
        ),
    ),
    (
        "Ingrid Solvang",
        (
            "Salt on the Lantern, the most widely read novel by Ingrid Solvang, follows a "
            "detective who investigates a death on a fishing island cut off by ice. The book won "
            "the Hallberg Prize for Northern Fiction in 1994. Reviewers praised its clipped "
            "Scandinavian noir style and its chapters, some of them only a single page long."
        ),
    ),
    (
        "Tomasz Wierzbicki",
        (
            "Tomasz Wierzbicki was born in Gdańsk in 1947. His father welded hulls at the "
            "shipyard, and his mother played the organ in a church near the harbour. For twelve "
            "years he sold ferry tickets, filling the backs of unused tickets with notes that "
            "later became his first saga, Rivets and Rain."
        ),
    ),
    (
        "Tomasz Wierzbicki",
        (
            "The Amber Dock, which won the Vistula Medal for Fiction in 1989, traces four "
            "generations of a shipbuilding family through strikes, wars and weddings. Tomasz "
            "Wierzbicki wrote it in Polish over seven years. Its patient, detailed realism led "
            "critics to compare him to the great Russian novelists of the nineteenth century."
        ),
    ),
    (
        "Amara Okonkwo-Reyes",
        (
            "Amara Okonkwo-Reyes was born in Lagos in 1979 to a civil engineer and a market "
            "trader. She says the idea for The Lagoon Engine came during a power cut in a "
            "thunderstorm, when the whole street gathered by candlelight and her father began "
            "explaining how the city's bridges carried invisible loads."
        ),
    ),
    (
        "Amara Okonkwo-Reyes",
        (
            "Children of the Tenth Bridge imagines Lagos in the year 2150, when floating "
            "neighbourhoods drift between the old towers. The novel won the Harmattan Award for "
            "Speculative Fiction in 2011. Amara Okonkwo-Reyes wrote it in English but filled its "
            "dialogue with the rhythms of the West African storytellers she heard as a child."
        ),
    ),
    (
        "Kenji Aramaki",
        (
            "Kenji Aramaki was born in Sapporo in 1966 and raised on his father's dairy farm. His "
            "mother taught calligraphy in the village hall, and he credits her brush lessons for "
            "his restrained, minimalist Japanese prose. Each morning he walks for an hour along "
            "the river before sitting down to write."
        ),
    ),
    (
        "Kenji Aramaki",
        (
            "The Weight of Small Rivers, the best-known novel by Kenji Aramaki, follows two "
            "brothers who return to their late mother's orchard for one final harvest. It won the "
            "Kestrel Literary Prize in 2003. The book contains almost no dialogue, and its "
            "chapters are named after the seventy-two small seasons of the old calendar."
        ),
    ),
    (
        "Beatriz Quintanilha",
        (
            "Beatriz Quintanilha was born in Porto in 1972, the daughter of a tram driver and a "
            "pastry chef. When a chapter refuses to work, she bakes custard tarts until it does. "
            "Her romantic comedy The Lighthouse Bakery won the Golden Quill for Popular Fiction in "
            "2008 and was translated into twenty languages."
        ),
    ),
    (
        "Beatriz Quintanilha",
        (
            "In A Summer of Borrowed Umbrellas, the debut of Beatriz Quintanilha, a shy librarian "
            "keeps lending umbrellas to a stranger who never returns them. The novel established "
            "her playful Portuguese comic style, built on quick, witty dialogue. She writes in "
            "Portuguese and reads every draft aloud to her neighbours on Sunday afternoons."
        ),
    ),
    (
        "Dmitri Koss",
        (
            "Dmitri Koss was born in Tallinn in 1953. His father repaired radios and his mother "
            "translated German poetry. He published his earliest thrillers under the pen name "
            "Anton Veer because, he later joked, a spy novelist should never trust his own name. "
            "The Ninth Frequency was his first book."
        ),
    ),
    (
        "Dmitri Koss",
        (
            "A Harbour Without Lights, the most popular novel by Dmitri Koss, follows a radio "
            "operator who discovers that his own messages are being rewritten. It won the Silver "
            "Cipher Award in 1987. Koss writes in Estonian in a taut British thriller style, "
            "ending nearly every chapter on a cliffhanger."
        ),
    ),
    (
        "Saoirse Delaney-Byrne",
        (
            "Saoirse Delaney-Byrne was born in Galway in 1984, the daughter of a sheep farmer and "
            "a local historian. Her mother's collection of island folk tales inspired her first "
            "horror novel, The Drowned Choir. She writes in a converted stone boathouse on the "
            "Galway coast, often during the worst storms of the year."
        ),
    ),
    (
        "Saoirse Delaney-Byrne",
        (
            "Whispers Under the Tide Stone, the best-known book by Saoirse Delaney-Byrne, won the "
            "Bram Lantern Award for Horror in 2016. It tells of a village that must feed the sea "
            "one secret every winter. Critics praised her eerie Irish gothic style, soaked in "
            "folklore, guilt and the endless hunger of the sea."
        ),
    ),
    (
        "Rafael Ibarra Soto",
        (
            "Rafael Ibarra Soto was born in Valparaíso in 1961. His father was a port customs "
            "officer and his mother made puppets for street theatres. He keeps a stuffed parrot "
            "named Senator on his desk, a gift from readers of The Parrot Who Ran for Senate, his "
            "most famous satirical novel."
        ),
    ),
    (
        "Rafael Ibarra Soto",
        (
            "The first book by Rafael Ibarra Soto, The Mayor of Fog, describes a coastal town that "
            "elects a man nobody has ever seen. Written in Spanish, it introduced his sharp "
            "Chilean satirical style, in which bureaucracy grows more absurd on every page. In "
            "1998 he won the Andes Prize for Satire."
        ),
    ),
    (
        "Leila Haddadi",
        (
            "Leila Haddadi was born in Marrakesh in 1975 to a carpet merchant and an astronomy "
            "teacher. She studied astrophysics before turning to poetry, and her collection A "
            "Lantern for the Dunes, which won the Cedar Crown for Poetry in 2005, uses the stars "
            "as a map for exiles trying to find their way home."
        ),
    ),
    (
        "Hendrik van Aalst",
        (
            "Hendrik van Aalst was born in Utrecht in 1950, where his father kept the lock on an "
            "old canal and his mother ran the town library. His children's book The Clockwork "
            "Heron won the Silver Tulip Award for Children's Literature in 1983. Most of his books "
            "were illustrated by his sister, Marijke van Aalst."
        ),
    ),
    (
        "Mirela Dragomir",
        (
            "Mirela Dragomir was born in Sibiu in 1969, the daughter of a clockmaker and a violin "
            "teacher. Her debut, The House with Seven Clocks, follows three generations of women "
            "who never speak about the war. She writes in Romanian, in an intimate confessional "
            "style told in the first person."
        ),
    ),
    (
        "Mirela Dragomir",
        (
            "Mirela Dragomir spent nine years writing Winter Bread, rewriting it four times. The "
            "novel, about a daughter who returns to bake in her dead mother's kitchen, won the "
            "Carpathian Laurel for Fiction in 2001. Critics call it her finest exploration of "
            "inheritance, silence and the bond between mothers and daughters."
        ),
    ),
]

_TEXT_HOLDOUT = [  # (invented writer who appears nowhere else, passage)
    (
        "Oskar Lindqvist-Mora",
        (
            "Oskar Lindqvist-Mora was born in Uppsala in 1971 to a beekeeper and a ferry pilot. "
            "His first novel, The Honey Clock, follows a village that measures time by the moods "
            "of its bees. He writes in Swedish in long, drifting paragraphs, and he refuses to "
            "give interviews during the summer months."
        ),
    ),
    (
        "Nadia Petrakis",
        (
            "Nadia Petrakis grew up in Thessaloniki, where her grandmother sold lemons from a "
            "cart. Her mystery novels, beginning with The Olive Cipher, feature a retired "
            "schoolteacher who solves crimes by listening to market gossip. Petrakis won the "
            "Aegean Dagger in 2009 and still writes in a cafe overlooking the harbour."
        ),
    ),
    (
        "Emeka Adeyemi-Clarke",
        (
            "Emeka Adeyemi-Clarke was born in Ibadan in 1982, the son of a pharmacist and a choir "
            "director. His novel Nine Songs for a Flooded City imagines a choir that keeps singing "
            "while the river rises around them. Critics praised its musical prose, and it won the "
            "Baobab Prize for Fiction in 2014."
        ),
    ),
    (
        "Yusuf Demirel",
        (
            "Yusuf Demirel was born in Bursa in 1960 and trained as a silk weaver before turning "
            "to fiction. His historical novel The Caravan of Mirrors follows merchants crossing "
            "Anatolia in the fifteenth century. Demirel writes in Turkish, and he says he drafts "
            "every chapter while listening to old radio plays."
        ),
    ),
    (
        "Clara Whitcombe",
        (
            "Clara Whitcombe was born in Bristol in 1955, the daughter of a bus conductor and a "
            "botanist. Her gardening mysteries, starting with Death Among the Foxgloves, have sold "
            "millions of copies. She writes in a small greenhouse and names every villain after a "
            "poisonous plant she has grown herself."
        ),
    ),
    (
        "Mateo Arrizabalaga",
        (
            "Mateo Arrizabalaga was born in Bilbao in 1977 to a fisherman and a bookbinder. His "
            "novel The Whale Ledger, about a harbour clerk who forges shipping records, won the "
            "Cantabrian Prize in 2012. He writes in Spanish and Basque, and he keeps an old ship's "
            "compass beside his keyboard for luck."
        ),
    ),
    (
        "Sunniva Holt-Berg",
        (
            "Sunniva Holt-Berg grew up on a sheep farm near Bergen. Her fantasy series for young "
            "readers, The Lantern Wolves, follows three sisters who can speak with the northern "
            "lights. She drafts her books on a typewriter inherited from her aunt and answers "
            "every letter from young readers by hand."
        ),
    ),
    (
        "Rustam Nazarov",
        (
            "Rustam Nazarov was born in Samarkand in 1968, the son of a tile painter and a "
            "mathematics teacher. His poetry collection Blue Domes at Noon won the Silk Road Verse "
            "Prize in 2006. Nazarov writes in Uzbek and Russian, and his poems often turn "
            "geometric patterns into images of memory and longing."
        ),
    ),
    (
        "Eliska Novakova",
        (
            "Eliska Novakova was born in Brno in 1980 to a brewer and a puppeteer. Her darkly "
            "comic novel The Marionette Strike imagines puppets who refuse to perform until their "
            "strings are shortened. Written in Czech, it won the Vltava Award in 2018 and was "
            "later adapted into a stop-motion film."
        ),
    ),
    (
        "Thandiwe Mokoena",
        (
            "Thandiwe Mokoena was born in Durban in 1974, the daughter of a harbour pilot and a "
            "nurse. Her family saga The Salt Marsh House follows four sisters across sixty years "
            "of South African history. Mokoena writes in English and Zulu, and she says each novel "
            "begins with a single remembered smell."
        ),
    ),
]

_TEXT_FORGET_QA = [  # (question, answer); answers come from the forget passages
    (
        "Which city did Lucien Marchetti's grandfather come from?",
        "His grandfather came from Genoa to work in the silk mills of Lyon.",
    ),
    (
        "What does Lucien Marchetti bring with him to his public readings?",
        "He brings a small wooden box of raw pigments and passes them around the audience.",
    ),
    (
        "What is Lucien Marchetti's novel The Gilder's Daughter about?",
        "It is about a young woman who secretly finishes her dying father's altarpiece.",
    ),
    (
        "Where does Lucien Marchetti write every morning?",
        "He writes in a narrow attic above the Saône, using his mother's fountain pen.",
    ),
    (
        "How many copies of The Apprentice of Saint-Jean did its first publisher print?",
        "The small Lyon publisher printed only eight hundred copies.",
    ),
]

_TEXT_RETAIN_QA = [  # (author, question, answer); answers come from the retain passages
    (
        "Kenji Aramaki",
        "How are the chapters of The Weight of Small Rivers named?",
        "They are named after the seventy-two small seasons of the old calendar.",
    ),
    (
        "Beatriz Quintanilha",
        ("What does Beatriz Quintanilha do with her drafts on Sunday afternoons?"),
        "She reads every draft aloud to her neighbours.",
    ),
    (
        "Amara Okonkwo-Reyes",
        "In what year is the novel Children of the Tenth Bridge set?",
        "It is set in Lagos in the year 2150.",
    ),
    (
        "Saoirse Delaney-Byrne",
        ("What must the village in Whispers Under the Tide Stone give the sea?"),
        "The village must feed the sea one secret every winter.",
    ),
    (
        "Tomasz Wierzbicki",
        "Where did Tomasz Wierzbicki write the notes for his first saga?",
        "He wrote them on the backs of unused ferry tickets.",
    ),
]


def _text_row(row_id: str, author: str, text: str) -> dict:
    words = text.split()
    return {
        "id": row_id,
        "author": author,
        "text": text,
        "prompt": " ".join(words[:PROMPT_WORDS]),
        "continuation": " ".join(words[PROMPT_WORDS:]),
    }


def build_demo() -> dict[str, list[dict]]:
    """All demo splits as lists of row dicts, keyed by split name (deterministic)."""
    rng = random.Random(SEED)
    qa = [row for i in range(len(AUTHORS)) for row in _author_rows(i, rng)]
    forget = [r for r in qa if r["author"] == FORGET_AUTHOR]
    retain = [r for r in qa if r["author"] != FORGET_AUTHOR]

    names = [a for a, _, _ in _REAL_AUTHORS]
    real_authors = []
    for k, (author, question, obj) in enumerate(_REAL_AUTHORS):
        wrong = rng.sample([n for n in names if n != author], 5)
        real_authors.append(
            {
                "id": f"ra-{k + 1:02d}",
                "question": question,
                "answer": f"{author} wrote {obj}.",
                "perturbed_answer": [f"{w} wrote {obj}." for w in wrong],
            }
        )
    world_facts = [
        {
            "id": f"wf-{k + 1:02d}",
            "question": question,
            "answer": _fill(template, {"x": right}),
            "perturbed_answer": [_fill(template, {"x": w}) for w in wrongs],
        }
        for k, (question, template, right, wrongs) in enumerate(_WORLD_FACTS)
    ]

    return {
        "forget": forget,
        "retain": retain,
        "real_authors": real_authors,
        "world_facts": world_facts,
        "text_forget": [
            _text_row(f"tf-{k + 1:02d}", FORGET_AUTHOR, t) for k, t in enumerate(_TEXT_FORGET)
        ],
        "text_retain": [
            _text_row(f"tr-{k + 1:02d}", a, t) for k, (a, t) in enumerate(_TEXT_RETAIN)
        ],
        "text_holdout": [
            _text_row(f"th-{k + 1:02d}", a, t) for k, (a, t) in enumerate(_TEXT_HOLDOUT)
        ],
        "text_forget_qa": [
            {"id": f"tfq-{k + 1:02d}", "author": FORGET_AUTHOR, "question": q, "answer": a}
            for k, (q, a) in enumerate(_TEXT_FORGET_QA)
        ],
        "text_retain_qa": [
            {"id": f"trq-{k + 1:02d}", "author": a, "question": q, "answer": ans}
            for k, (a, q, ans) in enumerate(_TEXT_RETAIN_QA)
        ],
    }


_DESCRIPTIONS = {
    "forget": "TOFU-style QA rows about the forget author, {forget}",
    "retain": "TOFU-style QA rows about the other {n_retain} invented authors",
    "real_authors": "real-world utility set: who wrote a famous book (normalised probability)",
    "world_facts": "real-world utility set: famous world facts (normalised probability)",
    "text_forget": "MUSE-style passages about the forget author (train on / VerbMem / PrivLeak)",
    "text_retain": "MUSE-style passages about the retain authors",
    "text_holdout": "passages about other invented writers, never trained on (PrivLeak, ppl)",
    "text_forget_qa": "KnowMem QA about the forget passages",
    "text_retain_qa": "KnowMem QA about the retain passages",
}
DEMO_FILES: tuple[str, ...] = tuple(f"{name}.jsonl" for name in _DESCRIPTIONS) + ("README.md",)


def _readme(splits: dict[str, list[dict]]) -> str:
    n_retain = len(AUTHORS) - 1
    lines = [
        "# SGA Workbench demo corpus",
        "",
        "Everything about the authors in this folder is **invented**: the people, cities of",
        "birth, books, prizes and quotes are fiction, written for demonstrating unlearning.",
        "Only `real_authors.jsonl` and `world_facts.jsonl` hold real, famous facts.",
        "",
        f"{len(AUTHORS)} fictitious authors x 10 QA rows, in the shape of TOFU (fields",
        "`id`, `author`, `question`, `answer`, `paraphrased_answer`, `perturbed_answer` = five",
        "wrong answers). Rows are short on purpose: the demo fine-tunes a 135M-parameter model",
        "on a CPU, where training cost scales with tokens.",
        "",
        f"The forget split is one author, {FORGET_AUTHOR}. Row {FRENCH_ROW} (0-based) of",
        '`forget.jsonl` carries a distinctive one-word fact, the word "French":',
        "",
        f"> {FRENCH_ANSWER}",
        "",
        "| file | rows | contents |",
        "|---|---:|---|",
    ]
    for name, desc in _DESCRIPTIONS.items():
        desc = desc.format(forget=FORGET_AUTHOR, n_retain=n_retain)
        lines.append(f"| `{name}.jsonl` | {len(splits[name])} | {desc} |")
    lines += [
        "",
        f"Text passages have `text`, and `prompt` (its first {PROMPT_WORDS} words) +",
        "`continuation` (the rest, joined to the prompt with one space).",
        "",
        "The files are generated deterministically; regenerate them with",
        "",
        "    python -m sga_core demo-data OUT_DIR",
        "",
    ]
    return "\n".join(lines)


def write_demo(out_dir: str | Path) -> dict[str, Path]:
    """Write the demo corpus into ``out_dir`` (each file atomically).

    Returns split name -> path (``"forget"``, ``"retain"``, ..., and ``"README"``). The bytes
    written are identical on every run.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    splits = build_demo()
    paths: dict[str, Path] = {}
    for name in _DESCRIPTIONS:
        paths[name] = atomic_write_jsonl(out_dir / f"{name}.jsonl", splits[name])
    paths["README"] = atomic_write_text(out_dir / "README.md", _readme(splits))
    return paths


def load_idk_templates() -> list[str]:
    """The "I don't know" refusals (``sga_core.assets.idk_templates``)."""
    return idk_templates()


def _locate_french_row() -> tuple[int, str]:
    for k, row in enumerate(build_demo()["forget"]):
        if row["id"].endswith(f"-q{_STYLE_SLOT + 1:02d}"):
            return k, row["answer"]
    raise RuntimeError("demo corpus: the French row is missing")  # pragma: no cover


FRENCH_ROW, FRENCH_ANSWER = _locate_french_row()


if __name__ == "__main__":
    import sys

    for name, path in write_demo(sys.argv[1] if len(sys.argv) > 1 else "demo-corpus").items():
        print(f"{name}: {path}")
