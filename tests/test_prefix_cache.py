"""The prompt-cache model and the prefix order, against counts done by brute force."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finmath_tasks.prefix_cache import (
    ANTHROPIC,
    ANTHROPIC_2048,
    OPENAI,
    SERVER,
    SLOT,
    CacheRule,
    Prompt,
    message_points,
    prefix_order,
    rule_for,
    serve,
)


def tokens_key(tokens: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """A key for prefix_order: the tokens in blocks of 128 (equal blocks, equal text)."""
    return tuple(tuple(tokens[k : k + 128]) for k in range(0, len(tokens), 128))


def lcp(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def brute(prompts: list[Prompt], rule: CacheRule, in_flight: int = 1) -> list[tuple[int, int]]:
    """Each prompt's (read, written) by comparing it with every earlier answered prompt."""
    out = []
    for i, prompt in enumerate(prompts):
        tokens = list(prompt.tokens)
        earlier = [list(p.tokens) for p in prompts[: max(0, i - in_flight + 1)]]
        marks = [p.points for p in prompts[: max(0, i - in_flight + 1)]]
        if rule.last_only:
            shared = lcp(tokens, earlier[-1]) if earlier else 0
            read = shared // rule.block * rule.block
            out.append((read if read >= rule.min_tokens else 0, 0))
        elif rule.marked:
            points = sorted(
                {p for p in prompt.points if rule.min_tokens <= p <= len(tokens) and p > 0}
            )
            candidates = (
                sorted(
                    {p for p in prompt.blocks if rule.min_tokens <= p <= points[-1]} | set(points)
                )[-20:]
                if points
                else []
            )
            read = max(
                (
                    p
                    for p in candidates
                    for other, other_points in zip(earlier, marks, strict=True)
                    if p in other_points
                    and rule.min_tokens <= p <= len(other)
                    and other[:p] == tokens[:p]
                ),
                default=0,
            )
            out.append((read, points[-1] - read if points and points[-1] > read else 0))
        else:
            shared = max((lcp(tokens, other) for other in earlier), default=0)
            read = shared // rule.block * rule.block
            out.append((read if read >= rule.min_tokens else 0, 0))
    return out


SMALL_OPENAI = CacheRule("small", 8, 4)
SMALL_MARKED = CacheRule("small marked", 5, 1, marked=True, write_factor=1.25)


@st.composite
def prompt_sets(draw: st.DrawFn) -> list[Prompt]:
    """Prompts built from a few shared openings, so that prefixes overlap a lot."""
    stems = draw(
        st.lists(st.lists(st.integers(0, 3), min_size=0, max_size=20), min_size=1, max_size=4)
    )
    prompts = []
    for _ in range(draw(st.integers(1, 12))):
        stem = stems[draw(st.integers(0, len(stems) - 1))]
        cut = draw(st.integers(0, len(stem)))
        tail = draw(st.lists(st.integers(0, 3), max_size=10))
        tokens = stem[:cut] + tail
        points = tuple(
            sorted(set([*draw(st.lists(st.integers(0, len(tokens)), max_size=3)), len(tokens)]))
        )
        prompts.append(Prompt(tokens, points))
    return prompts


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(prompt_sets(), st.integers(1, 3))
@pytest.mark.parametrize("rule", [SMALL_OPENAI, SMALL_MARKED, SLOT, SERVER, OPENAI])
def test_the_count_is_the_brute_force_count(
    rule: CacheRule, prompts: list[Prompt], in_flight: int
) -> None:
    [served] = serve(prompts, [rule], None, in_flight)
    assert served.per_prompt == brute(prompts, rule, in_flight)
    assert served.read == sum(r for r, _ in served.per_prompt)
    assert served.tokens == sum(len(p.tokens) for p in prompts)


def test_openai_rule_on_long_prompts() -> None:
    rng = random.Random(7)
    stem = [rng.randrange(50_000) for _ in range(3000)]
    first = Prompt([*stem, 1, 2, 3])
    second = Prompt(stem[:1500] + [9] * 700)  # shares 1,500 tokens: 11 blocks of 128
    third = Prompt(stem[:1000] + [8] * 900)  # shares 1,000 < 1,024: nothing
    [served] = serve([first, second, third], [OPENAI])
    assert served.per_prompt == [(0, 0), (1408, 0), (0, 0)]


def test_anthropic_reads_only_a_marked_prefix_an_earlier_request_wrote() -> None:
    system = list(range(1500))
    a = Prompt(system + [1] * 300, (1500, 1800))
    b = Prompt(system + [2] * 300, (1500, 1800))
    c = Prompt(system + [2] * 300 + [3] * 10, (1800, 1810))  # its system mark is not set
    served = serve([a, b, c], [ANTHROPIC])[0].per_prompt
    assert served[0] == (0, 1800)  # the first writes everything up to its last mark
    assert served[1] == (1500, 300)  # reads the system prefix a wrote, writes the rest
    assert served[2] == (1800, 10)  # reads b's whole prompt (b marked its end)
    # below the minimum nothing is read or written
    assert serve([a, b], [ANTHROPIC_2048])[0].per_prompt == [(0, 0), (0, 0)]
    # no marks (the task asks for no caching): nothing
    assert serve([Prompt(a.tokens), Prompt(b.tokens)], [ANTHROPIC])[0].read == 0


def test_in_flight_and_window() -> None:
    stem = list(range(2048))
    prompts = [Prompt([*stem, k]) for k in range(4)]
    # one at a time: every prompt after the first reads the stem
    assert serve(prompts, [OPENAI])[0].read == 3 * 2048
    # four at once: none is answered before the others are sent
    assert serve(prompts, [OPENAI], None, 4)[0].read == 0
    # two at once: the third and fourth read what the first and second wrote
    assert serve(prompts, [OPENAI], None, 2)[0].read == 2 * 2048
    # a lifetime of one request: a prefix used by the previous prompt is still there...
    assert serve(prompts, [OPENAI], 1)[0].read == 3 * 2048
    # ... but not one last used two requests ago
    other = Prompt([7] * 2048)
    assert serve([prompts[0], other, prompts[1]], [OPENAI], 1)[0].per_prompt[2] == (0, 0)
    assert serve([prompts[0], other, prompts[1]], [OPENAI], 2)[0].per_prompt[2] == (2048, 0)


def test_prefix_order_groups_shared_openings_and_spaces_them_by_in_flight() -> None:
    rng = random.Random(3)
    stems = [[rng.randrange(1000) for _ in range(1280)] for _ in range(5)]
    prompts = [Prompt(stems[k % 5] + [rng.randrange(1000) for _ in range(50)]) for k in range(40)]
    keys = [tokens_key(p.tokens) for p in prompts]
    walk = prefix_order(keys)
    assert sorted(walk) == list(range(40))
    # the walk lists each stem's prompts together
    groups = [walk[k * 8 : (k + 1) * 8] for k in range(5)]
    assert all(len({i % 5 for i in g}) == 1 for g in groups)
    # against a shuffled order, 4 in flight and a short lifetime: the order made for 4
    # in flight serves more than the shuffle and than the plain walk (made for 1)
    shuffle = list(range(40))
    rng.shuffle(shuffle)
    shuffled = serve([prompts[i] for i in shuffle], [OPENAI], 8, 4)[0].read
    walked = serve([prompts[i] for i in walk], [OPENAI], 8, 4)[0].read
    made = serve([prompts[i] for i in prefix_order(keys, 4)], [OPENAI], 8, 4)[0].read
    assert made > shuffled and made > walked
    # one at a time, the walk serves every prompt but each stem's first
    assert serve([prompts[i] for i in walk], [OPENAI], 1, 1)[0].read == 35 * 1280
    # with 4 in flight, the prefix order made for 4 serves every prompt but each strand's first
    order = prefix_order(keys, 4)
    served = serve([prompts[i] for i in order], [OPENAI], 8, 4)[0]
    assert sum(1 for r, _ in served.per_prompt if r == 1280) >= 40 - 5 - 4
    # and it is the same whatever the input order (it depends on the keys alone)
    again = prefix_order([keys[i] for i in shuffle], 4)
    assert [tuple(keys[shuffle[i]]) for i in again] == [tuple(keys[i]) for i in order]


@pytest.mark.parametrize(
    ("model", "rule"),
    [
        ("openai/gpt-4o-2024-08-06", OPENAI),
        ("openai/o3-mini", OPENAI),
        ("anthropic/claude-3-5-sonnet-20241022", ANTHROPIC),
        ("anthropic/claude-3-haiku-20240307", ANTHROPIC_2048),
        ("mockllm/model", None),
        ("google/gemini-1.5-pro", None),
    ],
)
def test_rule_for(model: str, rule: CacheRule | None) -> None:
    assert rule_for(model) == rule


def test_message_points_are_where_inspect_marks() -> None:
    assert message_points([100], ["user"]) == (100,)
    assert message_points([50, 100], ["system", "user"]) == (50, 150)
    assert message_points([50, 10, 20, 30], ["system", "user", "assistant", "user"]) == (
        50,
        80,
        110,
    )


def test_anthropic_looks_back_at_earlier_block_boundaries() -> None:
    """A request reads a prefix an earlier one wrote at a block boundary it did not mark
    itself (the lookback), but never without a mark of its own."""
    opening = list(range(1200))
    first = Prompt([*opening, 1, 2], (1200, 1202), (1200, 1202))
    later = Prompt([*opening, 5, 6, 7], (1203,), (1200, 1203))
    assert serve([first, later], [ANTHROPIC])[0].per_prompt[1] == (1200, 3)
    unmarked = Prompt(later.tokens, (), (1200, 1203))
    assert serve([first, unmarked], [ANTHROPIC])[0].per_prompt[1] == (0, 0)
