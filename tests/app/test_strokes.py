"""A drawing sent as its pen strokes (JSON ``strokes``), as the demo page sends a number: read by
``/read`` along its strokes, and taken by the one-digit routes as the picture they make."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app import schemas
from model_store.drawing import Drawing
from training.drawn import DIGIT_STROKES, pad_strokes
from training.not_numbers import pen_drawings
from training.numbers import make_drawings
from training.outliers import placed_letter
from training.pen_letters import LETTER_STROKES
from training.pen_numbers import as_sent, digit_strokes, pad_drawing, side_by_side

from .conftest import CNN, VIT, png_bytes

MODELS = ["cnn-mnist", "vit-mnist"]


def body(drawing: Drawing, **extra: Any) -> dict[str, Any]:
    """The JSON the page sends for a drawing (its pen, its canvas)."""
    strokes = [np.round(s, 2).tolist() for s in drawing.strokes]
    return {"strokes": strokes, "width": drawing.width, "height": drawing.height, "pen": drawing.pen, **extra}


def written(text: str, gaps: list[float], seed: int = 0) -> Drawing:
    """``text`` on the wide pad with these gaps (in digit heights; negative: written into the one before)."""
    digits = [digit_strokes(int(c)) for c in text]
    return pad_drawing(side_by_side(digits, gaps, 100.0, 60.0, 160.0, np.random.default_rng(seed)))


@pytest.fixture
def reader(make_client, shipped_store) -> TestClient:  # type: ignore[no-untyped-def]
    return make_client(store=shipped_store)


@pytest.mark.parametrize("name", [VIT, CNN])
def test_strokes_are_read_with_boxes_on_the_canvas(client: TestClient, name: str) -> None:
    drawing = written("2026", [0.3, 0.3, 0.3])
    r = client.post(f"/v1/models/{name}/read", json=body(drawing))
    assert r.status_code == 200, r.text
    digits = r.json()["digits"]
    assert 1 <= len(digits) <= 8 and r.json()["text"] == "".join(d["label"] for d in digits)
    ink = np.concatenate(drawing.strokes)
    for d in digits:  # the canvas's pixels, round the ink
        x0, y0, x1, y1 = d["box"]
        assert ink[:, 0].min() - 20 <= x0 < x1 <= ink[:, 0].max() + 20
        assert ink[:, 1].min() - 20 <= y0 < y1 <= ink[:, 1].max() + 20
    assert r.json()["timing"]["batch_size"] >= len(digits)


# read-eval's pen families sent as strokes, seed 5: (family, numbers, at least this many read exactly).
# ``touching``: neighbours run together, often written into one another (as pictures, seeds 0-2 read
# 75-78%; as strokes, 95% on seed 0). ``hands``: digits from templates the reader was never fitted on
# (the page's drawn digits, a slashed zero, a 1 with flag and foot, a looped 2), touching in half the
# numbers (as pictures 85-88%; here 29 of 30 for both models).
PEN_FAMILIES = [("touching", 40, 35), ("hands", 30, 27)]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize(("family", "count", "least"), PEN_FAMILIES)
def test_pen_numbers_are_read_along_their_strokes(
    reader: TestClient, name: str, family: str, count: int, least: int
) -> None:
    numbers = make_drawings(family, count, seed=5)
    read = [reader.post(f"/v1/models/{name}/read", json=body(d)).json()["text"] for d, _ in numbers]
    right = sum(r == t for r, (_, t) in zip(read, numbers, strict=True))
    assert right >= least, [(r, t) for r, (_, t) in zip(read, numbers, strict=True) if r != t]


@pytest.mark.parametrize("name", MODELS)
def test_punctuation_sent_as_strokes_is_read_in_place(reader: TestClient, name: str) -> None:
    """A decimal point tapped with the pen, a comma, a colon, a minus or a range's dash, sent as strokes
    (``make_drawings("marks")``): read into ``text`` and listed with their boxes. Seed 5: 20 of 20."""
    numbers = make_drawings("marks", 20, seed=5)
    right = 0
    for drawing, text in numbers:
        answer = reader.post(f"/v1/models/{name}/read", json=body(drawing)).json()
        right += answer["text"] == text
        if answer["text"] == text:
            assert "".join(m["mark"] for m in answer["marks"]) == "".join(c for c in text if not c.isdigit())
    assert all(not t.isdigit() for _, t in numbers)  # each carries a mark
    assert right >= 19


@pytest.mark.parametrize("name", MODELS)
def test_digits_crossing_their_neighbours(reader: TestClient, name: str) -> None:
    """20 numbers of 2-4 digits, each written 0.12 of its height into the one before (a 7's stem through
    a 4's arm, a 6's loop through a 3's; no 1s, which have no width to cross with): one blob of ink each.
    As strokes both models read all 20; as pictures, 6."""
    rng = np.random.default_rng(11)
    texts = ["".join(rng.choice(list("023456789"), int(rng.integers(2, 5)))) for _ in range(20)]
    drawings = [written(t, [-0.12] * (len(t) - 1), seed=k) for k, t in enumerate(texts)]
    read = [reader.post(f"/v1/models/{name}/read", json=body(d)).json()["text"] for d in drawings]
    assert sum(r == t for r, t in zip(read, texts, strict=True)) >= 18, list(zip(read, texts, strict=True))


def test_a_third_number_per_point_and_a_canvas_left_out(reader: TestClient) -> None:
    """[x, y, t] points (a time, a pressure) read as [x, y]; without a canvas or a pen, the strokes'
    own extent and the page's pen rule."""
    drawing = written("417", [0.3, 0.3])
    plain = reader.post("/v1/models/cnn-mnist/read", json=body(drawing)).json()
    timed = body(drawing)
    timed["strokes"] = [[[x, y, 10.0 * k] for k, (x, y) in enumerate(s)] for s in timed["strokes"]]
    assert reader.post("/v1/models/cnn-mnist/read", json=timed).json()["text"] == plain["text"] == "417"
    bare = {"strokes": body(drawing)["strokes"]}
    assert reader.post("/v1/models/cnn-mnist/read", json=bare).json()["text"] == "417"


@pytest.mark.parametrize("name", MODELS)
def test_one_digit_routes_take_strokes(reader: TestClient, name: str) -> None:
    """/predict and /attention: one digit drawn is read as its picture; a number drawn is named."""
    seven = written("7", [])
    r = reader.post(f"/v1/models/{name}/predict", json=body(seven))
    assert r.status_code == 200, r.text
    assert r.json()["digit"] == 7 and r.json()["is_digit"] is True
    png = reader.post(f"/v1/models/{name}/predict", content=png_bytes(as_sent(_pixels(seven))),
                      headers={"Content-Type": "image/png"})  # fmt: skip
    assert png.json()["digit"] == 7
    number = written("2026", [0.3, 0.3, 0.3])
    r = reader.post(f"/v1/models/{name}/predict", json=body(number))
    assert r.json()["is_digit"] is False and r.json()["hint"]["number"] == "2026"
    if name == "vit-mnist":
        r = reader.post(f"/v1/models/{name}/attention", json=body(seven))
        assert r.status_code == 200, r.text
        assert r.json()["digit"] == 7


@pytest.mark.parametrize("name", MODELS)
def test_letters_drawn_on_the_pad_get_no_hint(reader: TestClient, name: str) -> None:
    """A letter drawn alone on the square pad, sent as strokes: its strokes are pieces before any cut
    (an a's bowl and stem, each a whole digit), so the hint must see how much ink they share where they
    meet; two digits written side by side on the same pad are still named."""
    rng = np.random.default_rng(5)
    hinted, flagged = [], 0
    for letter in "aAHnpu":  # a K's arms touch its stem at a point, as two digits may: not caught
        for _ in range(4):
            strokes = pad_strokes(placed_letter(LETTER_STROKES[letter], rng))
            r = reader.post(f"/v1/models/{name}/predict", json=body(strokes))
            assert r.status_code == 200, r.text
            flagged += r.json()["is_digit"] is False
            if "hint" in r.json():
                hinted.append((letter, r.json()["hint"]["number"]))
    assert flagged >= 20 and hinted == []  # of 24: the hint was looked for, and declined
    two = [[(x * 0.4 + dx, y) for x, y in s] for dx, d in ((0.08, 4), (0.52, 2)) for s in DIGIT_STROKES[d][0]]
    r = reader.post(f"/v1/models/{name}/predict", json=body(pad_strokes(two)))
    assert r.json()["is_digit"] is False and r.json()["hint"]["number"] == "42"


def _pixels(drawing: Drawing) -> list[list[tuple[float, float]]]:
    return [[(float(x), float(y)) for x, y in s] for s in drawing.strokes]


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({"strokes": []}, "`strokes`: List should have at least 1 item"),
        ({"strokes": [[]]}, "`strokes.0`: List should have at least 1 item"),
        ({"strokes": [[[1]]]}, "`strokes.0.0`: List should have at least 2 items"),
        ({"strokes": [[[1, "a"]]]}, "`strokes.0.0.1`: Input should be a valid number"),
        ('{"strokes": [[[NaN, 2]]]}', "`strokes.0.0.0`: Input should be a finite number"),
        ({"strokes": [[[1, 2]]], "width": -3}, "`width`: Input should be greater than 0"),
        ({"strokes": [[[1, 2]]], "pen": 0}, "`pen`: Input should be greater than 0"),
        ({"strokes": [[[1, 2]]], "colour": "red"}, "unknown field(s) ['colour']"),
        ({"strokes": [[[1, 2]]], "image": "aGk="}, "exactly one of"),
        ({"strokes": [[[0, 0]] * 20_001]}, "20001 points: at most 20000 in all"),
        ({"strokes": [[[0, 0]] * 7_000] * 3}, "21000 points: at most 20000 in all"),
        ({"strokes": [[["x"]] * 20_001]}, "20001 points: at most 20000 in all"),  # counted before checked
        ({"strokes": [[[0, 0]]] * 257}, "`strokes`: List should have at most 256 items"),
    ],
)
def test_bad_strokes_are_422_saying_what_is_wrong(client: TestClient, payload: dict | str, says: str) -> None:
    sent: dict[str, Any] = {"json": payload}
    if isinstance(payload, str):  # not JSON a client library writes (NaN)
        sent = {"content": payload, "headers": {"Content-Type": "application/json"}}
    for route in ("read", "predict"):
        r = client.post(f"/v1/models/{VIT}/{route}", **sent)
        assert r.status_code == 422, r.text
        assert says in r.json()["detail"], r.json()["detail"]


def test_a_drawing_of_many_long_zigzags_is_answered(client: TestClient) -> None:
    """20,000 points zigzagging corner to corner of a 10^6 px canvas, one stroke or 256: answered (a
    digit, or no digits found), its curves sampled at most MAX_SAMPLES times (2 million before)."""
    zigzag = [[0, 0], [1e6, 1e6]] * 39
    for strokes in ([[[0, 0], [1e6, 1e6]] * 10_000], [[[x + i, y] for x, y in zigzag] for i in range(256)]):
        for route in ("predict", "read"):
            r = client.post(f"/v1/models/{VIT}/{route}", json={"strokes": strokes})
            assert r.status_code in (200, 422), r.text


def test_a_batch_takes_no_strokes(client: TestClient) -> None:
    r = client.post(f"/v1/models/{VIT}/predict/batch", json={"strokes": [[[1, 2]]]})
    assert r.status_code == 422 and "exactly one of ['images', 'pixels']" in r.json()["detail"]


def test_strokes_are_in_the_openapi_schema(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert "StrokesJSON" in spec["components"]["schemas"]
    for path in ("/v1/models/{name}/read", "/v1/models/{name}/predict"):
        json_body = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert {"$ref": "#/components/schemas/StrokesJSON"} in json_body["oneOf"]


EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "crossing.json"


@pytest.mark.parametrize("name", MODELS)
def test_the_readmes_crossing_drawing_is_made_as_it_says_and_reads_74(reader: TestClient, name: str) -> None:
    """docs/examples/crossing.json: a 7 whose stem runs through a 4's arm, as the README says it was made."""
    digits, rng = [digit_strokes(7), digit_strokes(4)], np.random.default_rng(0)
    drawing = pad_drawing(side_by_side(digits, [-0.12], 100.0, 60.0, 160.0, rng))
    made = {
        "strokes": [np.round(s, 1).tolist() for s in drawing.strokes],
        "width": drawing.width, "height": drawing.height, "pen": round(drawing.pen, 1),
    }  # fmt: skip
    example = json.loads(EXAMPLE.read_text())
    assert example == made
    r = reader.post(f"/v1/models/{name}/read", json=example)
    assert r.json()["text"] == "74" and len(r.json()["digits"]) == 2


@pytest.mark.parametrize("name", ["MAX_STROKES", "MAX_POINTS"])
def test_the_page_sends_strokes_only_within_the_routes_limits(name: str) -> None:
    """pad.js sends a drawing past these as its picture: the same limits as the body's model."""
    pad_js = (Path(__file__).parents[2] / "app" / "static" / "pad.js").read_text()
    found = re.search(rf"^const {name} = ([0-9]+);", pad_js, re.MULTILINE)
    assert found, f"pad.js no longer defines {name}"
    assert int(found.group(1)) == getattr(schemas, name)


@pytest.mark.parametrize("name", MODELS)
def test_words_written_with_the_pen_are_no_sure_numbers(reader: TestClient, name: str) -> None:
    """30 words written on the wide pad, sent as strokes (``training.not_numbers``' pen words, seed 5):
    their letters' strokes are read as digits ("11", "141464", "1078"), but the reading's confidence says
    how unlikely that is to be the text. Measured: 1 of 30 at 0.5 or more for each model, none at 0.9
    (before the confidence was fitted on pictures that are not numbers: 2 and 4, one of them at 0.9)."""
    words = pen_drawings("pen_words", 30, seed=5)
    answers = [reader.post(f"/v1/models/{name}/read", json=body(d)).json() for d in words]
    read = [a for a in answers if a["text"]]
    assert len(read) >= 20, "most words are read as some digits: the case the confidence is for"
    assert sum(a["confidence"] >= 0.5 for a in read) <= 2, [(a["text"], a["confidence"]) for a in read]
    assert not any(a["confidence"] >= 0.9 for a in read), [(a["text"], a["confidence"]) for a in read]
