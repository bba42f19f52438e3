"""Command line: `python -m engine [--eval E] [--search S] [--weights F]` speaks UCI on stdin/stdout.

`python -m engine bench` runs the benchmark instead.
"""

from __future__ import annotations

from typing import Optional

import click

from engine.backends import DEFAULT_EVALUATOR, EVALUATOR_NAMES, NATURAL_SEARCH, SEARCH_NAMES
from engine.options import MAX_THREADS

EVAL_HELP = ("Position evaluator: material (piece values), pst (material + piece-square tables), "
             "resnet (policy-value network, ONNX), comparator (DeepChess pairwise network, ONNX), "
             "dqn (DQN Q-network, ONNX: priors from its Q-values; alone with `go nodes 1`, or through puct).")
SEARCH_HELP = ("Search: alphabeta (for material/pst/resnet), puct (Monte-Carlo tree search, best with "
               "resnet), comparison (DeepChess alpha-beta over positions, needs comparator). "
               "Default: the evaluator's natural search (" +
               ", ".join(f"{e}->{s}" for e, s in NATURAL_SEARCH.items()) + ").")


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--eval", "evaluator", type=click.Choice(EVALUATOR_NAMES), default=DEFAULT_EVALUATOR,
              show_default=True, help=EVAL_HELP)
@click.option("--search", type=click.Choice(SEARCH_NAMES), default=None, help=SEARCH_HELP)
@click.option("--weights", type=click.Path(dir_okay=False), default=None,
              help="ONNX weights for resnet/comparator/dqn: a path, or the name of a file shipped in weights/ "
                   "(e.g. resnet-int8.onnx); default: the evaluator's shipped file.")
@click.pass_context
def cli(ctx: click.Context, evaluator: str, search: Optional[str], weights: Optional[str]) -> None:
    """A hackable neural chess engine speaking UCI on standard input and output.

    Point a GUI (Arena, CuteChess, cutechess-cli) at bin/engine, or type UCI
    commands: uci, isready, position startpos moves e2e4, go movetime 1000, quit.
    """
    ctx.ensure_object(dict)
    ctx.obj.update(evaluator=evaluator, search=search, weights=weights)
    if ctx.invoked_subcommand is None:
        from engine.uci import main
        main(evaluator, search, weights)


@cli.command()
@click.option("--nodes", type=int, default=None, help="Nodes per position (default depends on the search).")
@click.option("--all", "all_backends", is_flag=True, help="Bench every evaluator with its natural search.")
@click.option("--threads", type=click.IntRange(1, MAX_THREADS), default=1, show_default=True,
              help="CPU threads in all, as the UCI option Threads (the network and, with 2 or more, PUCT's overlap).")
@click.option("--option", "settings", multiple=True, metavar="NAME=VALUE",
              help="A tuning option of the evaluator or search, as setoption gives it (e.g. Overlap=false); "
                   "repeatable.")
@click.pass_context
def bench(ctx: click.Context, nodes: Optional[int], all_backends: bool, threads: int, settings: tuple[str, ...]
          ) -> None:
    """Search a fixed set of positions to a fixed node count; print total nodes, time and nps.

    With a network it also prints the bare network's positions per second (1 and 2 threads, at the search's
    minibatch size) and the search's nodes per second as a share of the better one (docs/bench.md).
    """
    from engine.bench import run_bench
    from hackmate_core.options import OptionError
    options = {}
    for setting in settings:
        name, equals, value = setting.partition("=")
        if not equals:
            raise click.BadParameter(f"{setting!r} is not NAME=VALUE", param_hint="--option")
        options[name.strip()] = value.strip()
    pairs = ([(e, s) for e, s in NATURAL_SEARCH.items()] + [("material", "puct")] if all_backends
             else [(ctx.obj["evaluator"], ctx.obj["search"])])
    for evaluator, search in pairs:
        try:
            run_bench(evaluator, search, ctx.obj["weights"], nodes, threads=threads, options=options)
        except OptionError as error:
            raise click.BadParameter(str(error), param_hint="--option") from None


if __name__ == "__main__":
    cli()
