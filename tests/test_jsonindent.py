"""The indented JSON writer spells every value exactly as `json.dumps(value, indent=2)`."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviewer import jsonindent

_KEY = st.one_of(
    st.text(max_size=8),
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
)
_LEAF = st.one_of(
    st.text(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
_TREE = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_KEY, inner, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_TREE)
def test_written_like_json_dumps_with_indent_2(value: Any) -> None:
    assert jsonindent.dumps(value) == json.dumps(value, indent=2)


def test_unicode_escapes_nan_and_empty_containers() -> None:
    value = {
        "emoji 🙂": ["é", "\u2028", "\x00", '"quoted"\n'],
        "numbers": [math.nan, math.inf, -math.inf, -0.0, 1e300, 10**30, True],
        "empty": [{}, [], ()],
        1.5: None,
        False: 0,
    }
    assert jsonindent.dumps(value) == json.dumps(value, indent=2)


@pytest.mark.parametrize("value", [{1, 2}, {(1, 2): "tuple key"}, b"bytes", object()])
def test_what_json_refuses_is_refused(value: Any) -> None:
    with pytest.raises(TypeError):
        json.dumps(value, indent=2)
    with pytest.raises(TypeError):
        jsonindent.dumps(value)
