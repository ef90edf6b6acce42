import pytest

from okt import names


@pytest.mark.parametrize(
    ("prefix", "legacy"),
    [("okt.io", ()), ("a.example.com", ()), ("okt.io", ("old.example.com",)), ("a.example.com", ("b.example.com",))],
)
def test_shared_names_are_those_of_their_own_prefixes(prefix: str, legacy: tuple[str, ...]) -> None:
    made = names.Names(prefix, legacy)
    shared = names.of(prefix, legacy)

    assert shared == made
    assert shared.owner_labels == made.owner_labels == (f"{prefix}/owner-uid", *(f"{p}/owner-uid" for p in legacy))
    assert shared.hash_annotation == f"{prefix}/okt-hash"
    assert shared.primary_annotations() == made.primary_annotations()


def test_another_prefix_or_legacy_prefix_never_answers_the_names_of_an_earlier_one() -> None:
    first = names.of("a.example.com", ("old.example.com",))

    assert names.of("a.example.com", ("old.example.com",)) is first
    assert names.of("a.example.com").owner_labels == ("a.example.com/owner-uid",)
    assert names.of("a.example.com", ("other.example.com",)).owner_labels == (
        "a.example.com/owner-uid",
        "other.example.com/owner-uid",
    )
    assert names.of("b.example.com", ("old.example.com",)).hash_annotation == "b.example.com/okt-hash"


def test_names_made_once_are_those_made_again() -> None:
    held = names.Names("a.example.com")
    read = held.error_count_annotation

    assert held.error_count_annotation is read
    assert names.Names("a.example.com").error_count_annotation == read == "a.example.com/error-count"
