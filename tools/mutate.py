"""Mutation check: break the engine on purpose, one named way at a time, and see whether the tests notice.

`python -m tools.mutate [NAME ...] [--list]`. Each mutation is applied to a temporary copy of the checkout (this
one is never touched), then the tests that should catch it run there, in strict mode (HACKMATE_STRICT=1). A
mutation the tests fail on is killed; one they pass is a hole in the suite. The output is one line a mutation and
a summary; the exit status is 1 when any survives.

A mutation names the exact text it replaces: when the code moves on, the tool says that the text is gone instead
of reporting a mutation that was never applied.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import click

ROOT = Path(__file__).resolve().parent.parent
#: What the copy leaves out: version control, the environment, caches and run outputs.
NOT_COPIED = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache", "runs", "*.egg-info")


class MutationGone(click.ClickException):
    """The text a mutation replaces is no longer in its file exactly once."""


def replace(path: str, old: str, new: str) -> Callable[[Path], None]:
    """A mutation that replaces ``old`` (present exactly once) by ``new`` in ``path`` of the copy."""
    def apply(root: Path) -> None:
        target = root / path
        text = target.read_text(encoding="utf-8")
        if text.count(old) != 1:
            raise MutationGone(f"{path}: the text to mutate occurs {text.count(old)} times, not once: {old!r}")
        target.write_text(text.replace(old, new), encoding="utf-8")
    return apply


def truncate(path: str) -> Callable[[Path], None]:
    """A mutation that cuts the file ``path`` of the copy to half its length."""
    def apply(root: Path) -> None:
        target = root / path
        data = target.read_bytes()
        target.write_bytes(data[: len(data) // 2])
    return apply


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    apply: Callable[[Path], None]
    #: pytest arguments: the tests that should catch it.
    tests: tuple[str, ...]
    #: Whether the copy's C extensions are built again after the mutation (it changes C).
    rebuild: bool = False


UCI_PLAY = ("tests/engine/test_uci_protocol.py", "-k", "every_backend_prints_info_lines")
SHIPPED_SCORES = ("tests/evaluators/test_shipped_scores.py",)
TRAINING_LEARNS = ("tests/training/resnet/test_training_pipeline.py", "-k", "fits_a_small_set or stopped_and_resumed")

MUTATIONS = [
    Mutation("illegal-move", "PUCT answers e2e5 whatever the position",
             replace("search/puct.py", "return SearchResult(best.move, ponder.move if ponder is not None else None)",
                     "return SearchResult(chess.Move.from_uci('e2e5'), None)"),
             UCI_PLAY),
    Mutation("search-raises", "PUCT raises at the start of every search",
             replace("search/puct.py", "-> SearchResult:\n        board = board.copy()\n",
                     "-> SearchResult:\n        raise RuntimeError('mutation')\n"),
             UCI_PLAY),
    Mutation("no-colour-flip", "the encoder no longer flips the board for Black",
             replace("evaluators/encoding.py", "    if black.any():\n", "    if False:\n"),
             SHIPPED_SCORES),
    Mutation("move-map-shifted", "every move's policy slot is the next one",
             replace("evaluators/moves.py", "    return _FORWARD[(from_sq, to_sq, move.promotion)]\n",
                     "    return _FORWARD[(from_sq, to_sq, move.promotion)] + 1\n"),
             SHIPPED_SCORES),
    Mutation("truncated-network", "weights/resnet.onnx cut to half its bytes",
             truncate("weights/resnet.onnx"),
             SHIPPED_SCORES),
    Mutation("loss-sign-reversed", "supervised training ascends its policy and value loss",
             replace("training/resnet/train.py", "loss = policy_loss + config.value_loss_weight * value_loss",
                     "loss = -(policy_loss + config.value_loss_weight * value_loss)"),
             TRAINING_LEARNS),
    Mutation("no-zero-grad", "supervised training never clears its gradients: each step adds the ones before",
             replace("training/resnet/train.py", "optimizer.zero_grad(set_to_none=True)\n            loss.backward()",
                     "loss.backward()"),
             TRAINING_LEARNS),
    Mutation("comparator-loss-sign-reversed", "DeepChess training ascends its cross-entropy",
             replace("training/deepchess/train.py", "loss = -(soft * F.log_softmax(logits, 1)).sum(1).mean()",
                     "loss = (soft * F.log_softmax(logits, 1)).sum(1).mean()"),
             ("tests/training/deepchess/test_deepchess_learning.py",)),
    Mutation("dqn-expert-loss-reversed", "DQN pushes the expert's moves down instead of up",
             replace("training/rl/dqn.py", "loss = loss + config.expert_weight * expert_loss",
                     "loss = loss - config.expert_weight * expert_loss"),
             ("tests/training/rl/test_dqn.py", "-k", "pretraining_fits_the_expert_moves")),
    Mutation("ppo-surrogate-reversed", "PPO descends its clipped surrogate: rewarded moves grow less likely",
             replace("training/rl/ppo.py", "policy_loss = -surrogate.mean()", "policy_loss = surrogate.mean()"),
             ("tests/training/rl/test_ppo.py", "-k", "raise_the_probability_of_the_moves_that_earn_rewards")),
    Mutation("distil-rows-shifted", "distillation gives each position the teacher's moves of the position before",
             replace("training/resnet/distil.py", "top = teacher.topk(min(top_k, POLICY_SIZE), dim=1)",
                     "top = teacher.roll(1, 0).topk(min(top_k, POLICY_SIZE), dim=1)"),
             ("tests/training/resnet/test_distil.py", "-k", "student_trained_on_distilled_targets")),
    Mutation("az-targets-are-priors", "AlphaZero's policy targets are the root's priors, not its visit counts",
             replace("training/rl/alphazero.py",
                     "visits = np.array([child.visits for child in children], dtype=np.float64)",
                     "visits = np.array([child.prior for child in children], dtype=np.float64)"),
             ("tests/training/rl/test_alphazero.py", "-k", "visit_targets_sum_to_one")),
    Mutation("az-gate-always-accepts", "AlphaZero's gate accepts every candidate, whatever its score",
             replace("training/rl/alphazero.py", '"accepted": stats.score >= config.gate_threshold}',
                     '"accepted": True}'),
             ("tests/training/rl/test_alphazero.py", "-k", "reinforce_learns_gates_candidates")),
    Mutation("export-wrong-kind", "the policy-value export names another kind of network in its metadata",
             replace("training/resnet/export.py", "move_network_metadata(RESNET_KIND, ",
                     "move_network_metadata(RESNET_KIND + '-v2', "),
             ("tests/training/resnet/test_training_pipeline.py", "-k", "engine_plays_the_exported_network")),
    Mutation("comparator-random", "the comparator's pair probability is a coin (Python)",
             replace("evaluators/comparator.py",
                     "return 0.5 + 0.5 * (_sigmoid(forward + self.out_bias) - _sigmoid(backward + self.out_bias))",
                     "return __import__('random').random()"),
             (*SHIPPED_SCORES, "-k", "comparator")),
    Mutation("compiled-comparator-random", "the compiled comparator's pair probability is a coin (C, rebuilt)",
             replace("hackmate_core/ccomp.c",
                     "return 0.5 + 0.5 * (sigmoid((double)forward + net->out_bias) - sigmoid((double)backward + "
                     "net->out_bias));", "return rand() / (double)RAND_MAX;"),
             ("tests/hackmate_core/test_compiled_comparison.py", "-k", "computes_numpy_s_numbers"), rebuild=True),
]


def run_tests(root: Path, tests: tuple[str, ...]) -> tuple[int, str]:
    """pytest's exit status on the copy at ``root``, in strict mode, and what it said: the first failure (the test
    and the start of its message, so a kill can be read as the right one) or else its last line."""
    # COLUMNS: pytest cuts its summary of a failure to the terminal's width, message first
    env = {**os.environ, "HACKMATE_STRICT": "1", "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1",
           "COLUMNS": "1000"}
    process = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-rfE", "-p", "no:cacheprovider", *tests],
                             cwd=root, env=env, capture_output=True, text=True)
    lines = [line for line in process.stdout.splitlines() if line.strip()]
    failures = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    if failures:
        test, _, message = failures[0].partition(" - ")
        return process.returncode, f"{test}: {message[:100]}" if message else test
    return process.returncode, lines[-1] if lines else process.stderr.strip()[-200:]


def check(mutation: Mutation, workdir: Path) -> tuple[bool, str]:
    """Whether the tests kill ``mutation`` (applied to a fresh copy in ``workdir``), and pytest's summary."""
    root = workdir / mutation.name
    shutil.copytree(ROOT, root, ignore=NOT_COPIED, symlinks=True)
    mutation.apply(root)
    if mutation.rebuild:  # the copy kept this checkout's builds: only what the mutation changed is compiled
        built = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=root,
                               capture_output=True, text=True)
        if built.returncode:
            raise click.ClickException(f"{mutation.name}: the C extensions did not build: {built.stderr[-500:]}")
    status, summary = run_tests(root, mutation.tests)
    if status not in (0, 1):  # 2-5: interrupted, internal error, usage, no tests: the check itself is broken
        raise click.ClickException(f"{mutation.name}: pytest could not run the tests (status {status}): {summary}")
    return status == 1, summary


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("names", nargs=-1)
@click.option("--list", "list_only", is_flag=True, help="List the mutations and the tests that should catch each.")
def cli(names: tuple[str, ...], list_only: bool) -> None:
    """Apply each mutation (all, or those NAMES) to a copy of the checkout and run the tests that should kill it."""
    known = {mutation.name: mutation for mutation in MUTATIONS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise click.BadParameter(f"unknown mutations {unknown}; known: {', '.join(known)}")
    chosen = [known[name] for name in names] or MUTATIONS
    if list_only:
        for mutation in chosen:
            click.echo(f"{mutation.name}: {mutation.what}; caught by {' '.join(mutation.tests)}")
        return
    survivors = []
    with tempfile.TemporaryDirectory(prefix="hackmate-mutate-") as workdir:
        # a kill means something only where the same tests pass on the checkout as it is
        for number, tests in enumerate(dict.fromkeys(mutation.tests for mutation in chosen)):
            failed, summary = check(Mutation(f"unmutated-{number}", "none", lambda root: None, tests), Path(workdir))
            if failed:
                raise click.ClickException(f"{' '.join(tests)} fail on the unmutated checkout: {summary}")
        for mutation in chosen:
            started = time.monotonic()
            killed, summary = check(mutation, Path(workdir))
            click.echo(f"{'killed  ' if killed else 'SURVIVED'} {mutation.name}: {mutation.what} "
                       f"({summary}; {time.monotonic() - started:.0f} s)")
            if not killed:
                survivors.append(mutation.name)
    click.echo(f"{len(chosen) - len(survivors)} of {len(chosen)} mutations killed"
               + (f"; survived: {', '.join(survivors)}" if survivors else ""))
    sys.exit(1 if survivors else 0)


if __name__ == "__main__":
    cli()
