"""The direct YAML writer with long strings: keys and values around the lengths it remembers."""

from __future__ import annotations

import pytest

from reviewer import yamlio

# Around the longest plain key (120) and the longest string remembered once spelled (256).
LENGTHS = (119, 120, 121, 255, 256, 257, 1000)


@pytest.mark.parametrize("length", LENGTHS)
def test_a_long_string_is_written_as_ruamel_writes_it_as_key_and_value_again_and_again(
    length: int,
) -> None:
    text = ("long-key-" * length)[:length]
    quoted = "'" + text[1:]  # spelled by ruamel.yaml, not written plain
    for document in (
        {text: "a", "b": text},
        {"b": text, text: "a"},
        {quoted: quoted, "nested": {quoted: [quoted, text]}},
        {text: {text: text}},
    ):
        for _ in range(2):  # the second time from what the first remembered
            assert yamlio.dump(document) == yamlio.dump_with_ruamel(document)
