"""PEP 503's normalized names (compatkit.model.names) agree with packaging's
``canonicalize_name``, which compatkit no longer imports for them."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st
from packaging.utils import canonicalize_name

from compatkit.model.names import normalize_name

# names as they are written (letters, digits and the separators, runs of them included), and
# any text at all: the two must agree on whatever a METADATA file or a folder name holds
WRITTEN = st.text(alphabet=st.sampled_from("aZz09-_.-_.Ééİß"), max_size=30)


@given(st.one_of(WRITTEN, st.text(max_size=30)))
@example("Foo.Bar_baz")
@example("oslo..concurrency")
@example("A-_.-B")
@example("-leading_and_trailing.")
@example("İSTANBUL")  # lower-casing makes it longer
def test_normalize_name_is_packagings_canonicalize_name(name: str) -> None:
    assert normalize_name(name) == canonicalize_name(name)


def test_normalize_name_collapses_runs_of_separators() -> None:
    assert normalize_name("Zope.__Interface--X") == "zope-interface-x"
