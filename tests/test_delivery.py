"""What leaves a CI run (`reviewer.delivery`): the summary form and the outbound checks."""

from __future__ import annotations

import pytest
from commandargs import memory_console

from reviewer.delivery import FOOTER_MARK, check_outbound, summary
from reviewer.errors import ReviewerError
from reviewer.redact import LeakError, LeakGuard

TOKEN = "ghs_" + "A1b2C3d4E5f6G7h8I9j0"
REPORT = f"""## reviewer

1 changed release

<details>
<summary>prod/web/app</summary>

the whole diff
</details>

{FOOTER_MARK}
Rendered by reviewer.
"""


def test_the_summary_stops_before_the_details_and_keeps_the_footer() -> None:
    short = summary(REPORT)
    assert short.startswith("## reviewer\n\n1 changed release\n")
    assert "the whole diff" not in short and "<details>" not in short
    assert short.endswith(f"{FOOTER_MARK}\nRendered by reviewer.\n")


def test_a_credential_given_to_the_run_never_leaves_it() -> None:
    console, _, _ = memory_console()
    env = {"GITHUB_TOKEN": TOKEN}
    check_outbound({"comment": "nothing secret here"}, env, "GITHUB_TOKEN", console)
    with pytest.raises(ReviewerError, match="the comment contains a credential") as refused:
        check_outbound({"comment": f"token: {TOKEN}"}, env, "GITHUB_TOKEN", console)
    assert TOKEN not in str(refused.value)


def test_a_secret_value_is_refused_by_the_console_guard() -> None:
    console, _, _ = memory_console()
    guarded = console.guarded(LeakGuard(["Sup3r-Secret-Value"]).check)
    with pytest.raises(LeakError):
        check_outbound({"job summary": "pw=Sup3r-Secret-Value"}, {}, "GITHUB_TOKEN", guarded)
