"""A variant sentence that is its seed's sentence reworded word for word makes the variant a copy in part.

What a user of the synthesized data relies on: an accepted variant is a new task, not its seed's sentences with
synonyms swapped in ('If it falls under 40 PSI, would it make sense to hit the nearest tire shop?' for the seed's
'If it falls under 37.5 PSI, perhaps we could swing by the nearest tire shop?', read 45). The 5-gram checks miss such
a sentence (each synonym breaks five grams); the aligned word sequence does not. And the phrasebook's own sentence
rewordings never produce one, or the verdict would refuse every variant that used them.
"""

from __future__ import annotations

import json

import pytest

from envs.dataset import load_tasks
from envs.task import Message, Task
from prompts import PROMPTS_DIR
from rods_agents.analysis.novelty import kept_seed_sentence, rewords, seed_copy_reasons, sentence_words


def _seed(name: str) -> Task:
    return load_tasks(ids=[f"multi_turn_{name}"])[0]


def _first_turn(seed: Task, text: str | None = None) -> Task:
    """The seed's first turn alone, its text replaced by ``text`` when given; ground truth and config unchanged."""
    task = seed.model_copy(deep=True, update={"turns": seed.turns[:1], "ground_truth": seed.ground_truth[:1]})
    if text is not None:
        task.id = seed.id + "__edited"
        task.turns = [[Message(role="user", content=text)]]
    return task


_TRIP = "My tires need a look before a short work trip. "


def _kept_reasons(variant: Task, seed: Task) -> list[str]:
    return [r for r in seed_copy_reasons(variant, seed) if r.startswith("novelty:seed_sentence_kept")]


def test_a_condition_reworded_word_for_word_is_the_seeds_sentence():
    """miss_func_78 turn 0 ends 'If it falls under 37.5 PSI, perhaps we could swing by the nearest tire shop?'."""
    seed = _first_turn(_seed("miss_func_78"))
    variant = _first_turn(seed, _TRIP + "If it falls under 40 PSI, would it make sense to hit the nearest tire shop?")
    assert kept_seed_sentence(variant, seed) is not None
    assert _kept_reasons(variant, seed) == [
        "novelty:seed_sentence_kept turn=0 text='if it falls under would it make sense to hit the nearest tire shop'"]


def test_the_same_condition_in_a_shape_of_its_own_is_new():
    seed = _first_turn(_seed("miss_func_78"))
    variant = _first_turn(seed, _TRIP + "Anything under 40 PSI means a stop at whichever tire shop is closest.")
    assert kept_seed_sentence(variant, seed) is None
    assert not _kept_reasons(variant, seed)


def test_a_short_request_for_the_same_call_is_nobodys_sentence():
    """'Would you initiate this order for me?' and 'Can you kick this order off for me?' are two of the few ways to ask
    for a call; a reader does not see the seed in the second."""
    assert not rewords(*(sentence_words(t)[0] for t in ("Can you kick this order off for me?",
                                                         "Would you initiate this order for me?")))


def test_sentences_sharing_only_their_values_are_not_aligned_by_them():
    """Places, months and numbers are what a variant changes; two fare requests that share only the shape 'from X to
    Y on DATE in CLASS class' are different sentences."""
    a = "Could you price first class from New York to Beijing for October 5th, 2026?"
    b = "I need a first class seat from New York to Los Angeles for this upcoming Thursday October 12th 2026."
    assert not rewords(sentence_words(a)[0], sentence_words(b)[0])


def test_an_apostrophe_inside_a_word_quotes_nothing():
    """'I'd ... don't' once read as a quoted text from one apostrophe to the next and masked the words between, so a
    seed sentence and its rewording with two contractions each shrank to the same few words and passed as new."""
    words = sentence_words("I'd like you to book the flight, but don't charge my card yet.")[0]
    assert {"like", "book", "flight", "charge", "card"} <= set(words), words
    seed = "If it's under 37.5 PSI, perhaps we could swing by the nearest tire shop that's open?"
    variant = "If it's under 40 PSI, would it make sense to hit the nearest tire shop that's open?"
    assert rewords(sentence_words(variant)[0], sentence_words(seed)[0])
    assert "may" in sentence_words("You may book it in June.")[0]  # a verb, not the month


def _sentence_rewordings() -> list:
    data = json.loads((PROMPTS_DIR / "phrasebook" / "sentences.json").read_text())["sentences"]
    pairs = [(key, form) for key, forms in data.items() for form in forms]
    return [pytest.param(key, form, id=f"form{i}") for i, (key, form) in enumerate(pairs)]


@pytest.mark.parametrize(("key", "form"), _sentence_rewordings())
def test_no_sentence_rewording_is_its_sentence_reworded_word_for_word(key, form):
    """A rewording the verdict reads as the seed's sentence (novelty:seed_sentence_kept) is never accepted: it only
    costs a retry, and where a scenario has no other it left the scenario with no variant (44 and 198)."""
    for words in sentence_words(form):
        assert not any(rewords(words, original) for original in sentence_words(key)), (key, form)


def test_a_kept_stated_entity_is_counted_and_a_documented_option_is_not():
    """``kept_stated_entities`` counts what the reads mark 'partly new' for: the seed's stated file or amount said and
    used again. A travel class or an ignition mode is the task's vocabulary, not an entity it keeps."""
    from rods_agents.analysis.novelty import kept_stated_entities

    seed = _seed("base_0")
    assert "final_report.pdf" in kept_stated_entities(seed, seed)
    assert "budget analysis" in kept_stated_entities(seed, seed)
    renamed = seed.model_copy(deep=True, update={"id": seed.id + "__edited"})
    for turn in renamed.turns:
        for m in turn:
            m.content = m.content.replace("final_report.pdf", "expense_report.pdf")
    renamed.ground_truth = [[c.replace("final_report.pdf", "expense_report.pdf") for c in t] for t in seed.ground_truth]
    assert "final_report.pdf" not in kept_stated_entities(renamed, seed)
    travel = _seed("base_173")
    assert "business" not in kept_stated_entities(travel, travel)  # a documented travel class
    assert "LAX" in kept_stated_entities(travel, travel)
