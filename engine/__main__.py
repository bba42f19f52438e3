"""Command line: `python -m engine [--eval E] [--search S] [--weights F]` speaks UCI on stdin/stdout.

`python -m engine bench` runs the benchmark instead, `--list-options` prints every UCI option. The choices and
help of ``--eval`` and ``--search`` come from the backends registry (:mod:`engine.backends`), plugins included;
a broken plugin is a warning on standard error and the rest works.
"""

from __future__ import annotations

from typing import Optional

import click

from engine import __version__
from engine.backends import DEFAULT_EVALUATOR, registry
from engine.options import DEFAULT_THREADS, MAX_THREADS, options_table

BACKENDS = registry()
for _problem in BACKENDS.problems:
    click.echo(f"warning: {_problem}", err=True)

EVAL_HELP = "Position evaluator (its natural search in brackets): " + "; ".join(
    f"{name} ({cls.NATURAL_SEARCH}): {cls.HELP}" for name, cls in BACKENDS.evaluators.items()) + "."
SEARCH_HELP = "Search; default: the evaluator's natural one. " + "; ".join(
    f"{name}: {cls.HELP}" for name, cls in BACKENDS.searches.items()) + "."
WEIGHTS_HELP = ("Network file of the evaluator: a path (ONNX, or for resnet a Leela Chess Zero network, .pb.gz or "
                ".pb), or the name of a file shipped in weights/ (e.g. resnet-int8.onnx); default: the evaluator's "
                "shipped file.")


def backend_options(function):
    """--eval, --search and --weights, for the engine and again for bench (either place works)."""
    function = click.option("--weights", type=click.Path(dir_okay=False), default=None, help=WEIGHTS_HELP)(function)
    function = click.option("--search", type=click.Choice(list(BACKENDS.searches)), default=None,
                            help=SEARCH_HELP)(function)
    return click.option("--eval", "evaluator", type=click.Choice(list(BACKENDS.evaluators)), default=None,
                        help=EVAL_HELP + f" Default: {DEFAULT_EVALUATOR}.")(function)


def list_options(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(options_table(BACKENDS.listed_options()))
        ctx.exit()


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@backend_options
@click.option("--list-options", is_flag=True, expose_value=False, is_eager=True, callback=list_options,
              help="Print every UCI option of the engine and of every evaluator and search (a Markdown table) "
                   "and exit.")
@click.version_option(__version__, "--version", prog_name="hackmate", help="Print the version and exit.")
@click.pass_context
def cli(ctx: click.Context, evaluator: Optional[str], search: Optional[str], weights: Optional[str]) -> None:
    """A hackable neural chess engine speaking UCI on standard input and output.

    Point a GUI (Arena, CuteChess, cutechess-cli) at bin/engine, or type UCI
    commands: uci, isready, position startpos moves e2e4, go movetime 1000, quit.
    """
    ctx.ensure_object(dict)
    ctx.obj.update(evaluator=evaluator, search=search, weights=weights)
    if ctx.invoked_subcommand is None:
        from engine.uci import main
        main(evaluator or DEFAULT_EVALUATOR, search, weights)


@cli.command()
@backend_options
@click.option("--nodes", type=click.IntRange(1), default=None,
              help="Nodes per position (default: the search's own, e.g. 800 for puct).")
@click.option("--depth", type=click.IntRange(1, 64), default=None,
              help="Search each position as `go depth` does instead of to a node count (for alpha-beta and "
                   "comparison: the time to that depth).")
@click.option("--all", "all_backends", is_flag=True,
              help="Bench every evaluator with its natural search, and material with puct.")
@click.option("--threads", type=click.IntRange(1, MAX_THREADS), default=DEFAULT_THREADS, show_default=True,
              help="CPU threads in all, as the UCI option Threads and with its default (the network and, with 2 "
                   "or more, PUCT's overlap).")
@click.option("--option", "settings", multiple=True, metavar="NAME=VALUE",
              help="A tuning option of the evaluator or search, as setoption gives it (e.g. Overlap=false); "
                   "repeatable.")
@click.pass_context
def bench(ctx: click.Context, evaluator: Optional[str], search: Optional[str], weights: Optional[str],
          nodes: Optional[int], depth: Optional[int], all_backends: bool, threads: int,
          settings: tuple[str, ...]) -> None:
    """Search a fixed set of positions to a fixed node count; print total nodes, time and nps.

    --eval, --search and --weights may come before `bench` or after it. With a network it also prints the bare
    network's positions per second (1 and 2 threads, at the search's minibatch size) and the search's nodes per
    second as a share of the better one (docs/bench.md).
    """
    from engine.bench import run_bench
    from hackmate_core.options import OptionError, option_settings
    try:
        options = option_settings(settings)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--option") from None
    evaluator = evaluator or ctx.obj["evaluator"] or DEFAULT_EVALUATOR
    pairs = ([(name, BACKENDS.natural_search(name)) for name in BACKENDS.evaluators] + [("material", "puct")]
             if all_backends else [(evaluator, search or ctx.obj["search"])])
    for evaluator, search in pairs:
        try:
            run_bench(evaluator, search, weights or ctx.obj["weights"], nodes, threads=threads, options=options,
                      depth=depth)
        except OptionError as error:
            raise click.BadParameter(str(error), param_hint="--option") from None


if __name__ == "__main__":
    cli()
