"""POST /v1/models/{name}/read: a picture of a number -> its digits, boxes and the text."""

from __future__ import annotations

import base64
import importlib.util
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image, ImageDraw

from testkit.digits import number_cropped_flush
from testkit.displays import dseg_fonts, lit_number
from testkit.plates import plate_photo
from testkit.reference import reference_probabilities
from training.display_digits import BAR_ENDS, Display
from training.display_fonts import display_picture
from training.numbers import display_number, make_family, random_displayed
from training.pen_numbers import marked_number, stroke_number

from .conftest import CNN, VIT, png_bytes


def number_png(text: str, seed: int = 0) -> bytes:
    return png_bytes(stroke_number(text, np.random.default_rng(seed)))


@pytest.mark.parametrize("name", [VIT, CNN])
def test_read_multipart_returns_every_digit_left_to_right(client: TestClient, name: str) -> None:
    r = client.post(f"/v1/models/{name}/read", files={"file": ("n.png", number_png("2026"), "image/png")})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["model"] == name
    digits = body["digits"]
    # Random weights: the model chooses among the ways to split, so only the shape of the answer holds.
    assert 1 <= len(digits) <= 8
    assert body["text"] == "".join(d["label"] for d in digits) and body["marks"] == []
    xs = [d["box"][0] for d in digits]
    assert xs == sorted(xs)
    for d in digits:
        x0, y0, x1, y1 = d["box"]
        assert 0 <= x0 < x1 <= 840 and 0 <= y0 < y1 <= 280
        assert len(d["probabilities"]) == 10 and d["line"] == 0
        assert "input" not in d
    assert body["timing"]["batch_size"] >= max(4, len(digits))  # every alternative in one forward pass
    assert body["confidence"] is None or 0.0 <= body["confidence"] <= 1.0


@pytest.fixture
def reader(make_client, shipped_store: Path) -> TestClient:  # type: ignore[no-untyped-def]
    """An app serving the shipped, trained models."""
    return make_client(store=shipped_store)


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
@pytest.mark.parametrize(("text", "seed"), [("2026", 0), ("417", 3), ("5874", 1)])
def test_trained_models_read_drawn_numbers_exactly(
    reader: TestClient, name: str, text: str, seed: int
) -> None:
    r = reader.post(
        f"/v1/models/{name}/read", content=number_png(text, seed), headers={"Content-Type": "image/png"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["text"] == text


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_the_confidence_says_how_likely_the_whole_reading_is_right(reader: TestClient, name: str) -> None:
    """``read-eval``'s touching numbers as pictures, seed 5: a third are misread, many with every digit
    read confidently (two digits taken for one). The reading's confidence is lower for those than for the
    ones read right (means 0.34 / 0.59 against 0.85 / 0.88, cnn / vit; a right one the surer in 84% /
    79% of pairs); a plainly written number is sure."""
    samples = make_family("touching", 40, seed=5)
    answers = [reader.post(f"/v1/models/{name}/read", content=png_bytes(img)).json() for img, _ in samples]
    right = [a["confidence"] for a, (_, text) in zip(answers, samples, strict=True) if a["text"] == text]
    wrong = [a["confidence"] for a, (_, text) in zip(answers, samples, strict=True) if a["text"] != text]
    assert len(wrong) >= 4, "the family is misread often enough to tell"
    assert np.mean(wrong) < np.mean(right) - 0.2, (np.mean(wrong), np.mean(right))
    surer = np.mean([r > w for r in right for w in wrong])
    assert surer > 0.7, surer
    plain = reader.post(f"/v1/models/{name}/read", content=number_png("2026")).json()
    assert plain["text"] == "2026" and plain["confidence"] > 0.9


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
@pytest.mark.parametrize("text", ["12.5", "-42", "1,000", "12:30", "0,75", "10-20"])
def test_trained_models_read_punctuation_between_digits(reader: TestClient, name: str, text: str) -> None:
    picture = png_bytes(marked_number(text, np.random.default_rng(0)))
    r = reader.post(f"/v1/models/{name}/read", content=picture, headers={"Content-Type": "image/png"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["text"] == text
    assert [m["mark"] for m in body["marks"]] == [c for c in text if not c.isdigit()]
    digit_boxes = [d["box"] for d in body["digits"]]
    for mark in body["marks"]:  # in a gap: no digit's box takes in a mark's middle
        middle = (mark["box"][0] + mark["box"][2]) / 2
        assert mark["line"] == 0 and not any(x0 < middle < x1 for x0, _, x1, _ in digit_boxes)


def notebook_jpeg(text: str, seed: int, turn: float = 0.0) -> bytes:
    """The pen-stroke number on a photo of lined paper (1000x600): blue rulings, a red margin line
    down the page, the number written to its right; the page turned ``turn`` degrees."""
    rng = np.random.default_rng(seed)
    page = Image.new("RGB", (1000, 600), (250, 250, 245))
    draw = ImageDraw.Draw(page)
    for y in range(50, 600, 50):
        draw.line([(0, y), (1000, y)], fill=(150, 180, 230), width=2)
    draw.line([(90, 0), (90, 600)], fill=(220, 80, 80), width=3)
    pen = Image.fromarray(stroke_number(text, rng)).resize((504, 168))  # ink on white, 3:1
    ink = 1.0 - np.asarray(pen, np.float32)[..., None] / 255.0
    rgb = np.asarray(page, np.float32)
    rgb[230:398, 130:634] += (np.array([20.0, 30.0, 90.0]) - rgb[230:398, 130:634]) * ink
    photo = Image.fromarray(rgb.astype(np.uint8)).rotate(
        turn, Image.Resampling.BICUBIC, fillcolor=(250, 250, 245)
    )
    return png_bytes(photo, fmt="JPEG", quality=85)


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
@pytest.mark.parametrize(
    ("text", "seed", "turn"),
    [("503", 0, 0.0), ("94", 1, 0.0), ("65230", 2, 0.0), ("7759", 3, 5.0), ("31", 4, -6.5)],
)
def test_a_number_on_a_notebook_page_is_read_without_its_margin_line(
    reader: TestClient, name: str, text: str, seed: int, turn: float
) -> None:
    """Left in, the margin line was read as a 1 in front of the number, or it set the line's height
    and the number read as one digit; on a page turned more than 3 degrees, the rulings too."""
    r = reader.post(f"/v1/models/{name}/read", content=notebook_jpeg(text, seed, turn),
                    headers={"Content-Type": "image/jpeg"})  # fmt: skip
    assert r.status_code == 200, r.text
    assert r.json()["text"] == text


def shadowed_jpeg(text: str, seed: int) -> bytes:
    """The pen-stroke number photographed with a hard shadow across it (the phone's): a straight edge
    at a random angle, 40-55% darker beyond it, grain, JPEG."""
    rng = np.random.default_rng(seed)
    pen = stroke_number(text, rng).astype(np.float32) / 255.0  # ink on white
    h, w = pen.shape
    yy, xx = np.mgrid[0:h, 0:w]
    a = rng.uniform(0, 2 * np.pi)
    across = np.cos(a) * (xx / w - 0.5) + np.sin(a) * (yy / h - 0.5) - rng.uniform(-0.2, 0.2)
    light = 0.92 * (1.0 - rng.uniform(0.4, 0.55) * np.clip(across / 0.01 + 0.5, 0.0, 1.0))
    page = light * (0.08 + 0.92 * pen) + rng.normal(0.0, 0.015, (h, w))
    return png_bytes(np.clip(page * 255, 0, 255).astype(np.uint8), fmt="JPEG", quality=88)


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_a_number_with_a_shadow_across_it_is_read(reader: TestClient, name: str) -> None:
    """The shadowed part of the page read as ink (or the lit part, where the shadow covered most of it),
    or the picture came out empty: before shadows were lifted, 58-59% of such numbers read exactly
    (150, seed 21), now 83-84%; of these 12, the CNN reads 9 and the ViT 10."""
    texts = [str(n) for n in np.random.default_rng(7).integers(10, 100_000, 12)]
    read = [reader.post(f"/v1/models/{name}/read", content=shadowed_jpeg(t, seed),
                        headers={"Content-Type": "image/jpeg"}).json().get("text")
            for seed, t in enumerate(texts)]  # fmt: skip
    assert sum(r == t for r, t in zip(read, texts, strict=True)) >= 8, list(zip(read, texts, strict=True))


def two_to_five_digits(rng: np.random.Generator) -> str:
    return "".join(str(d) for d in rng.integers(0, 10, int(rng.integers(2, 6))))


def answer_to_png(reader: TestClient, route: str, body: bytes) -> dict:
    """The JSON answer to a PNG sent to ``route`` (asserted 200)."""
    r = reader.post(route, content=body, headers={"Content-Type": "image/png"})
    assert r.status_code == 200, r.text
    return r.json()


def read_on_displays(
    reader: TestClient, name: str, rng: np.random.Generator, number: Callable[[np.random.Generator], str]
) -> list[tuple[str, str]]:
    """12 numbers drawn by ``number`` on displays of random geometry, dark bars on white, an LCD's faint
    unlit bars or light bars on a dark face, each sent to ``/read``: (text read, text shown)."""
    read = []
    for i in range(12):
        text = number(rng)
        height = float(rng.uniform(60, 110))
        width, thick, gap = (height * rng.uniform(*r) for r in ((0.5, 0.6), (0.08, 0.12), (0.03, 0.06)))
        display = Display(height, width, thick, gap, rng.uniform(0, 0.15), BAR_ENDS[i % 3])
        gray = lit_number(text, display, unlit=235 if i % 4 == 1 else None, leds=i % 4 == 2)
        body = png_bytes((255 * gray).astype(np.uint8))
        read.append((answer_to_png(reader, f"/v1/models/{name}/read", body)["text"], text))
    return read


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_numbers_on_seven_segment_displays_are_read(reader: TestClient, name: str) -> None:
    """Each digit's bars are grouped into one digit (model_store.displays) and read by models that saw
    display digits in training. Before both, 2 (cnn) and 3 (vit) of these 12 were read; now 12 and 11."""
    read = read_on_displays(reader, name, np.random.default_rng(5), two_to_five_digits)
    assert sum(got == text for got, text in read) >= 10, read


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_display_digits_one_bar_apart_are_told_apart(reader: TestClient, name: str) -> None:
    """Digits a display draws one bar apart (6 and 5, 8 and 0, 9 and 5), 2-5 of them, in the DSEG7 faces
    and looks (training.display_fonts: dark bars on white, an LCD's unlit bars, lit LEDs): the gaps
    between a digit's bars are closed before it is read (model_store.segment, Page.fit). With them the
    classifiers read a display's 6 as a 5 and its 8 as a 0 at times: before, 22 (cnn) and 33 (vit) of
    these 48 were read; now 32 and 38."""
    fonts = dseg_fonts()
    rng = np.random.default_rng(23)
    read = []
    for _ in range(48):
        text = "".join(rng.choice(list("0356896"), int(rng.integers(2, 6))))
        body = png_bytes(display_number(text, rng, fonts))
        read.append((answer_to_png(reader, f"/v1/models/{name}/read", body)["text"], text))
    assert sum(got == text for got, text in read) >= {"cnn-mnist": 29, "vit-mnist": 36}[name], read


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_a_display_digit_one_bar_apart_is_read_alone(reader: TestClient, name: str) -> None:
    """A display's 6, 8 and 9 sent alone to /predict, in each DSEG7 face, dark bars on white: its bars
    are joined before it is fitted (model_store.preprocess, as on a display page). Before, 51 (cnn) and
    67 (vit) of these 72 were read; now 60 and 72."""
    fonts = dseg_fonts()
    rng = np.random.default_rng(29)
    read = []
    for font in fonts:
        for digit in "689":
            body = display_picture(digit, rng, font, "print", int(rng.integers(40, 110)))
            read.append((answer_to_png(reader, f"/v1/models/{name}/predict", body)["label"], digit))
    assert sum(got == digit for got, digit in read) >= {"cnn-mnist": 57, "vit-mnist": 70}[name], read


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_a_displays_point_colon_and_minus_are_read(reader: TestClient, name: str) -> None:
    """A scale's 12.5, a clock's 12:30, a thermometer's -4: the display's punctuation is found among
    its bars (model_store.displays) and spelled between the digits. Before, 8 (cnn) and 7 (vit) of these
    12 were read, every colon and some points lost ("1048", "1446"); then 12 and 9 (the ViT read a
    display's 6 as a 5 at times, and an 8 as a 0); now, each digit's bars joined before it is read, 12
    and 12."""
    read = read_on_displays(reader, name, np.random.default_rng(11), random_displayed)
    assert sum(got == text for got, text in read) >= 11, read


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_a_number_cropped_flush_to_its_ink_is_read(reader: TestClient, name: str) -> None:
    """Cropped to the ink before sending, at the size it was written: the strokes cross the border.
    Before, 25 (cnn) and 24 (vit) of these 30 read exactly: the paper's surface rose with the strokes of
    a digit alone and faded them (a 6 read as 1), and the stems of 1s and 4s, running edge to edge,
    were taken for squared paper's rulings and went."""
    rng = np.random.default_rng(5)
    texts = [str(n) for n in rng.integers(0, 10, 6)] + [str(n) for n in rng.integers(10, 1_000_000, 24)]
    read = []
    for seed, text in enumerate(texts):
        body = png_bytes(number_cropped_flush(text, seed))
        read.append(reader.post(f"/v1/models/{name}/read", content=body,
                                headers={"Content-Type": "image/png"}).json().get("text"))  # fmt: skip
    assert sum(r == t for r, t in zip(read, texts, strict=True)) >= 29, list(zip(read, texts, strict=True))


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_a_house_number_on_its_plate_is_read(reader: TestClient, name: str) -> None:
    """A dark plate with light figures on a lighter wall was read as one huge stroke with holes, and a
    plate's printed frame added 1s either side of the number (model_store.sheet paints the wall and the
    frame over). Before, 6 of these 12 were read by each model: none of the first plate's four, and two
    framed ones with a 1 beside them ("11708", "19"); now all 12."""
    looks = [(40, 245, 200), (25, 215, 150), (245, 20, 120)]  # plate, figures, wall
    texts = ["42", "1708", "365", "9"]
    read, cases = [], []
    for k, (plate, figures, wall) in enumerate(looks):
        for seed, text in enumerate(texts):
            body, _ = plate_photo(text, plate, figures, wall, frame=seed % 2 == 1, seed=10 * k + seed)
            cases.append(text)
            read.append(reader.post(f"/v1/models/{name}/read", content=body,
                                    headers={"Content-Type": "image/jpeg"}).json().get("text"))  # fmt: skip
    assert read == cases


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
@pytest.mark.parametrize(("text", "seed"), [("2026", 0), ("417", 3)])
def test_a_circled_number_is_read_without_its_circle(
    reader: TestClient, name: str, text: str, seed: int
) -> None:
    """An answer circled with the pen, the loop clear of the digits: it read as 0s around them."""
    pad = Image.fromarray(stroke_number(text, np.random.default_rng(seed)))
    page = Image.new("L", (1100, 600), 255)
    page.paste(pad, (130, 160))
    ys, xs = np.nonzero(np.asarray(page) < 128)
    cx, cy = (xs.min() + xs.max()) / 2, (ys.min() + ys.max()) / 2
    rx, ry = 0.65 * (xs.max() - xs.min()) + 30, 0.7 * (ys.max() - ys.min()) + 25
    ImageDraw.Draw(page).ellipse([cx - rx, cy - ry, cx + rx, cy + ry], outline=0, width=9)
    r = reader.post(f"/v1/models/{name}/read", content=png_bytes(page), headers={"Content-Type": "image/png"})
    assert r.status_code == 200, r.text
    assert r.json()["text"] == text


def test_read_raw_body_and_json_give_the_same_answer(client: TestClient) -> None:
    data = number_png("417", seed=3)
    raw = client.post(f"/v1/models/{VIT}/read", content=data, headers={"Content-Type": "image/png"})
    js = client.post(f"/v1/models/{VIT}/read", json={"image": base64.b64encode(data).decode()})
    assert raw.status_code == js.status_code == 200
    assert [d["box"] for d in raw.json()["digits"]] == [d["box"] for d in js.json()["digits"]]
    assert raw.json()["text"] == js.json()["text"]


def test_read_return_input_gives_each_digit_as_the_model_saw_it(
    reader: TestClient, shipped_store: Path
) -> None:
    r = reader.post("/v1/models/cnn-mnist/read?return_input=true", content=number_png("58"),
                    headers={"Content-Type": "image/png"})  # fmt: skip
    digits = r.json()["digits"]
    assert len(digits) == 2
    inputs = np.array([d["input"] for d in digits])
    assert inputs.shape == (2, 28, 28) and 0.0 <= inputs.min() and inputs.max() <= 1.0
    assert not np.allclose(inputs[0], inputs[1])  # one crop per digit, not one picture twice
    # the model called in-process on these inputs gives the answers the service gave
    ref = reference_probabilities(shipped_store, "cnn-mnist", inputs * 255.0)
    np.testing.assert_allclose([d["probabilities"] for d in digits], ref, atol=1e-5)


def test_read_two_lines_top_to_bottom(reader: TestClient) -> None:
    top = stroke_number("12", np.random.default_rng(1))
    bottom = stroke_number("345", np.random.default_rng(2))
    r = reader.post("/v1/models/vit-mnist/read", content=png_bytes(np.vstack([top, bottom])),
                    headers={"Content-Type": "image/png"})  # fmt: skip
    body = r.json()
    assert [d["line"] for d in body["digits"]] == [0, 0, 1, 1, 1]
    assert body["text"] == "12\n345"


def test_read_empty_picture_is_422(client: TestClient) -> None:
    blank = np.full((280, 840), 255, np.uint8)
    r = client.post(f"/v1/models/{VIT}/read", content=png_bytes(blank), headers={"Content-Type": "image/png"})
    assert r.status_code == 422
    assert "ink" in r.json()["detail"]


def test_read_too_many_marks_is_413_before_any_inference(make_client) -> None:  # type: ignore[no-untyped-def]
    c = make_client(max_digits=3)
    r = c.post(f"/v1/models/{VIT}/read", content=number_png("12345"), headers={"Content-Type": "image/png"})
    assert r.status_code == 413
    assert "at most 3 digits" in r.json()["detail"]
    dots = np.zeros((200, 600), np.uint8)
    for y in range(10, 190, 30):
        for x in range(10, 590, 30):
            dots[y : y + 10, x : x + 10] = 255  # 120 marks: refused before splitting or fitting any
    r = c.post(f"/v1/models/{VIT}/read", content=png_bytes(dots), headers={"Content-Type": "image/png"})
    assert r.status_code == 413


@pytest.mark.parametrize(
    ("kwargs", "status"),
    [
        ({"content": b"not an image", "headers": {"Content-Type": "image/png"}}, 400),
        ({"content": b"%PDF", "headers": {"Content-Type": "application/pdf"}}, 415),
        ({"json": {"pixels": [[0] * 28] * 28}}, 422),
        ({"json": {"image": "***"}}, 400),
    ],
)
def test_read_bad_input(client: TestClient, kwargs: dict, status: int) -> None:
    r = client.post(f"/v1/models/{VIT}/read", **kwargs)
    assert r.status_code == status, r.text
    assert isinstance(r.json()["detail"], str)


def test_read_unknown_model_is_404(client: TestClient) -> None:
    r = client.post("/v1/models/nope/read", content=number_png("1"), headers={"Content-Type": "image/png"})
    assert r.status_code == 404


def test_read_is_in_the_openapi_schema(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    op = spec["paths"]["/v1/models/{name}/read"]["post"]
    assert set(op["requestBody"]["content"]) == {"multipart/form-data", "image/*", "application/json"}
    assert "ReadResponse" in spec["components"]["schemas"]


# ------------------------------------------------------- /predict's hint: a number sent as one digit


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_predict_names_a_number_sent_as_one_digit(reader: TestClient, name: str) -> None:
    picture = number_png("2026")
    r = reader.post(f"/v1/models/{name}/predict", files={"file": ("n.png", picture, "image/png")})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["is_digit"] is False
    hint = body["hint"]
    assert hint["number"] == "2026" and hint["route"] == f"/v1/models/{name}/read"
    assert '"2026"' in hint["message"] and hint["route"] in hint["message"]
    # the route it names reads that number
    read = reader.post(hint["route"], files={"file": ("n.png", picture, "image/png")})
    assert read.json()["text"] == "2026"


def test_attention_and_base64_json_name_the_number_too(reader: TestClient) -> None:
    picture = marked_number("-12.5", np.random.default_rng(0))
    r = reader.post(
        "/v1/models/vit-mnist/attention", files={"file": ("n.png", png_bytes(picture), "image/png")}
    )
    assert r.status_code == 200, r.text
    assert r.json()["hint"]["number"] == "-12.5"
    image = base64.b64encode(number_png("417", 3)).decode()
    r = reader.post("/v1/models/cnn-mnist/predict", json={"image": image})
    assert r.status_code == 200, r.text
    assert r.json()["hint"]["number"] == "417"


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_no_hint_for_a_digit_nor_for_pictures_that_are_not_numbers(reader: TestClient, name: str) -> None:
    from training.outliers import generate_outliers

    one = reader.post(
        f"/v1/models/{name}/predict", content=number_png("7"), headers={"Content-Type": "image/png"}
    )
    assert one.status_code == 200 and one.json()["is_digit"] is True and "hint" not in one.json()
    flagged = 0
    for o in generate_outliers(per_family=6, seed=0):
        if o.family == "multi_digit":
            continue
        r = reader.post(f"/v1/models/{name}/predict", content=o.png, headers={"Content-Type": "image/png"})
        assert r.status_code in (200, 422), r.text  # 422: refused as empty (faint noise)
        if r.status_code == 200:
            flagged += r.json()["is_digit"] is False
            assert "hint" not in r.json(), (o.what, r.json()["hint"])
    assert flagged >= 36  # of 54: the hint was looked for, and declined


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_no_hint_for_photos(reader: TestClient, name: str) -> None:
    """Faces and photographed scenes split into blobs the model calls digits ("65", "1\n1", "\n\n11"
    with lines of nothing read). Of these 80, 14 (cnn) and 15 (vit) were named as numbers before the
    detectors learnt photographed scenes and a reading that leaves a piece unread stopped being plainly a
    number; now 3 and 1 (a face's eyes and mouth as "65", "131")."""
    from training.outliers import photographed_scene

    rng = np.random.default_rng(5)
    pictures = [png_bytes(photographed_scene(rng)[0]) for _ in range(40)]
    if importlib.util.find_spec("skimage") is not None:
        from training.real_photos import photo_uploads

        pictures += photo_uploads(crops=1, seed=0)["faces"][:40]
    hinted = []
    for picture in pictures:
        r = reader.post(f"/v1/models/{name}/predict", content=picture, headers={"Content-Type": "image/png"})
        assert r.status_code in (200, 422), r.text
        if r.status_code == 200 and "hint" in r.json():
            hinted.append(r.json()["hint"]["number"])
    assert len(hinted) <= 4, hinted


def test_pixels_get_no_hint_and_hints_can_be_switched_off(make_client, shipped_store: Path) -> None:  # type: ignore[no-untyped-def]
    noise = np.random.default_rng(0).integers(0, 256, (28, 28)).tolist()
    on = make_client(store=shipped_store)
    r = on.post("/v1/models/vit-mnist/predict", json={"pixels": noise})
    assert r.status_code == 200 and r.json()["is_digit"] is False and "hint" not in r.json()
    off = make_client(store=shipped_store, number_hints=False)
    r = off.post(
        "/v1/models/vit-mnist/predict", content=number_png("2026"), headers={"Content-Type": "image/png"}
    )
    assert r.status_code == 200 and r.json()["is_digit"] is False and "hint" not in r.json()


def test_a_fault_in_the_split_costs_the_hint_not_the_answer(reader: TestClient, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The hint is extra: should splitting the picture fail unexpectedly, /predict still answers."""
    import app.reading

    def broken(*args: object) -> None:
        raise ValueError("a bug in the splitting rules")

    monkeypatch.setattr(app.reading, "split_upload", broken)
    r = reader.post(
        "/v1/models/vit-mnist/predict", content=number_png("2026"), headers={"Content-Type": "image/png"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["is_digit"] is False and "hint" not in r.json()


def test_a_lone_dash_or_rule_is_no_number(reader: TestClient) -> None:
    """A picture of nothing but flat bars: 422 saying no digits were found (it was cut into dozens of
    slivers, "at least 101 separate marks", 413)."""
    for bars in ([(40, 140, 240, 142)], [(40, 120, 240, 126), (40, 150, 240, 156)]):
        img = Image.new("L", (280, 280), 255)
        for bar in bars:
            ImageDraw.Draw(img).rectangle(bar, fill=0)
        r = reader.post(
            "/v1/models/vit-mnist/read", content=png_bytes(img), headers={"Content-Type": "image/png"}
        )
        assert r.status_code == 422 and "no digits found" in r.json()["detail"], r.text


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_the_readmes_clock_reads_as_it_says(reader: TestClient, name: str) -> None:
    """docs/examples/clock.jpg, the README's display example (an LCD clock's "12:30", DSEG7 Classic):
    the colon read between the digits (before, "1230": its lower dot is off the baseline)."""
    body = (Path(__file__).resolve().parents[2] / "docs" / "examples" / "clock.jpg").read_bytes()
    r = reader.post(f"/v1/models/{name}/read", files={"file": ("clock.jpg", body, "image/jpeg")})
    assert r.status_code == 200, r.text
    assert r.json()["text"] == "12:30" and [m["mark"] for m in r.json()["marks"]] == [":"]


def typeset_png(text: str, size: int = 60) -> bytes:
    """The number typeset in DejaVu Sans, black on white, one line."""
    from PIL import ImageFont

    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", size)
    img = Image.new("L", (int(font.getlength(text)) + 48, 2 * size), 255)
    ImageDraw.Draw(img).text((24, 24), text, fill=0, font=font)
    return png_bytes(np.asarray(img))


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
@pytest.mark.parametrize("text", ["7" * 20, "97207698456428071508", "11220186848339"])
def test_a_long_number_is_read_whole(reader: TestClient, name: str, text: str) -> None:
    """Each digit of a long line holds under 6% of its ink: the cut round small writing took them for
    specks and kept a few ("777" for twenty 7s), and more candidates than one engine call holds fell
    back to the rules' digits alone (a 0 read "11"); both at confidence 0.98-1.0."""
    r = reader.post(f"/v1/models/{name}/read", files={"file": ("n.png", typeset_png(text), "image/png")})
    assert r.status_code == 200, r.text
    assert r.json()["text"] == text, (r.json()["text"], r.json()["confidence"])


def test_candidates_past_one_engine_call_go_as_several_and_answer_as_one(
    make_client, shipped_store: Path
) -> None:  # fmt: skip
    """With room for 12 images per engine call a 10-digit number's candidates take three or four calls:
    the rows come back in order (the same answer as from one call), counted as one request of the model."""
    body = {"files": {"file": ("n.png", typeset_png("4096172853"), "image/png")}}
    whole = make_client(store=shipped_store).post("/v1/models/vit-mnist/read", **body).json()
    small = make_client(store=shipped_store, max_batch_images=8, max_digits=12)
    parts = small.post("/v1/models/vit-mnist/read", **body)
    assert parts.status_code == 200, parts.text
    got, want = ([d["probabilities"] for d in r["digits"]] for r in (parts.json(), whole))
    assert np.allclose(got, want, atol=1e-5)
    assert parts.json()["text"] == whole["text"] == "4096172853"
    stats = small.get("/v2/models/vit-mnist/stats").json()["model_stats"][0]
    assert stats["inference_count"] > 12  # more candidates than one call holds ...
    assert stats["inference_stats"]["success"]["count"] == 1  # ... in one request
    assert stats["inference_stats"]["fail"]["count"] == 0
