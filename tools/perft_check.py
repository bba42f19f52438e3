"""Check the compiled board against python-chess on random positions, then time perft on both paths.

``python -m tools.perft_check [--count 100000] [--seed 1] [--fens 0.3] [--timings/--no-timings]``

Positions come from random games (the standard start and Chess960 starts, captures, checks, promotions and
castling played more often than chance would) and from random FENs, some of them odd ones python-chess
accepts (no king, two kings, pawns on a back rank, the side not to move in check, many queens, castling
rights without their rook, made-up en-passant squares, long fifty-move counters). The compiled board must
either refuse a position (ValueError: the engine then stays on the pure-Python path; counted by reason)
or agree with python-chess on all of: the legal moves in python-chess's order, the position after each of
them (bitboards, castling rights, en-passant square, clocks), the number of replies to each (perft 2),
check, gives_check, game end by hackmate_core.rules.game_result, the transposition key against one built
afresh and the Polyglot key. A game's positions are reached by pushing on one compiled board, so its
incremental keys and repetition history are checked along the way. Every mismatch is printed with its FEN.

The timings (perft of the start position at the given depths, compiled and then pure Python) are for a
quiet machine; the check itself is not a benchmark.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any, Iterator, Optional

import chess
import chess.polyglot
import click

from hackmate_core import compiled, perft, rules
from hackmate_core.compiled import move_code

#: Piece types of the random FENs' extra pieces, weighted as a middlegame's.
EXTRA_PIECES = [chess.PAWN] * 8 + [chess.KNIGHT, chess.KNIGHT, chess.BISHOP, chess.BISHOP, chess.ROOK, chess.ROOK,
                                   chess.QUEEN]


def state(board: chess.Board) -> tuple:
    """python-chess's position as the compiled board's state() gives it."""
    return (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings,
            board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK], board.turn,
            board.clean_castling_rights(), board.ep_square, board.halfmove_clock, board.fullmove_number)


def random_fen_board(rng: random.Random) -> chess.Board:
    """A random position python-chess accepts: mostly plausible ones (castling and en passant set up now and
    then), a few odd ones."""
    board = chess.Board(None, chess960=rng.random() < 0.3)
    free = list(range(64))
    rng.shuffle(free)

    def place(square: int, piece_type: int, color: bool) -> None:
        free.remove(square)
        board.set_piece_at(square, chess.Piece(piece_type, color))

    for color, backrank in ((chess.WHITE, 0), (chess.BLACK, 56)):
        if rng.random() < 0.4:  # ready to castle: king between two rooks on its back rank
            files = sorted(rng.sample(range(8), 3)) if board.chess960 else [0, 4, 7]
            if all(backrank + file in free for file in files):
                place(backrank + files[1], chess.KING, color)
                place(backrank + files[0], chess.ROOK, color)
                place(backrank + files[2], chess.ROOK, color)
                board.castling_rights |= chess.BB_SQUARES[backrank + files[0]] | chess.BB_SQUARES[backrank + files[2]]
                continue
        kings = rng.choices((1, 0, 2), (0.96, 0.02, 0.02))[0]
        for _ in range(kings):
            place(free[-1], chess.KING, color)
    for _ in range(rng.randrange(0, 24)):
        piece_type = rng.choice(EXTRA_PIECES) if rng.random() > 0.03 else chess.QUEEN
        square = free[-1]
        if piece_type == chess.PAWN and chess.BB_SQUARES[square] & chess.BB_BACKRANKS and rng.random() > 0.02:
            continue
        place(square, piece_type, rng.random() < 0.5)
    board.turn = rng.random() < 0.5
    if board.was_into_check() and rng.random() < 0.9:  # mostly the side to move, not the other, in check
        board.turn = not board.turn
    if rng.random() < 0.05:  # castling rights on random back-rank squares, rooks or not
        board.castling_rights |= rng.getrandbits(8) | rng.getrandbits(8) << 56
    if rng.random() < 0.3:
        forward = 8 if board.turn == chess.WHITE else -8
        passed = [square for square in range(40, 48) if board.turn == chess.WHITE and square + forward in free]
        passed += [square for square in range(16, 24) if board.turn == chess.BLACK and square + forward in free]
        plausible = [square for square in passed if square in free and square - forward in free]
        if plausible and rng.random() < 0.9:
            board.ep_square = rng.choice(plausible)
            if rng.random() < 0.9:
                place(board.ep_square - forward, chess.PAWN, not board.turn)
        else:
            board.ep_square = rng.randrange(64)
    board.halfmove_clock = rng.choice((0, rng.randrange(100), 99, 100, 101, rng.randrange(1000)))
    board.fullmove_number = rng.randrange(1, 200)
    return board


def _pick_move(board: chess.Board, moves: list[chess.Move], rng: random.Random) -> chess.Move:
    """A random move, with captures, promotions and castling more often than among all moves."""
    if rng.random() < 0.5:
        special = [move for move in moves
                   if move.promotion or board.is_capture(move) or board.is_castling(move)]
        if special:
            return rng.choice(special)
    return rng.choice(moves)


def random_games(rng: random.Random) -> Iterator[tuple[chess.Board, Any]]:
    """(python-chess board, compiled board) pairs along random games: the same moves pushed on both."""
    while True:
        board = (chess.Board.from_chess960_pos(rng.randrange(960)) if rng.random() < 0.3 else chess.Board())
        fast = compiled.cboard.Board.from_board(board)
        for _ in range(rng.randrange(10, 200)):
            yield board, fast
            moves = list(board.generate_legal_moves())
            if not moves:
                break
            move = _pick_move(board, moves, rng)
            board.push(move)
            fast.push(move_code(move))


def mismatches(board: chess.Board, fast: Any, tree_plies: int) -> list[str]:
    """What the compiled board gets wrong about ``board`` (nothing: an empty list)."""
    found = []
    moves = list(board.generate_legal_moves())
    codes = fast.legal_moves()
    if [move_code(move) for move in moves] != codes:
        mine = [compiled.code_move(code).uci() for code in codes]
        return [f"legal moves {mine} instead of {[move.uci() for move in moves]}"]
    if fast.state() != state(board):
        found.append(f"state {fast.state()} instead of {state(board)}")
    if fast.key != compiled.cboard.Board.from_board(board, history=False).key:
        found.append("the incremental key differs from a fresh board's")
    if fast.polyglot_key != chess.polyglot.zobrist_hash(board):
        found.append("polyglot key")
    if fast.is_check() != board.is_check():
        found.append("is_check")
    expected_result = rules.game_result(board, moves, tree_plies)
    if fast.result(tree_plies) != expected_result:
        found.append(f"result({tree_plies}) {fast.result(tree_plies)} instead of {expected_result}")
    if fast.gives_check(codes) != [board.gives_check(move) for move in moves]:
        found.append("gives_check")
    replies = 0
    for move, code in zip(moves, codes):
        board.push(move)
        fast.push(code)
        replies += board.legal_moves.count()
        if fast.state() != state(board):
            found.append(f"after {move.uci()}: state {fast.state()} instead of {state(board)}")
        fast.pop()
        board.pop()
    if fast.perft(2) != replies:
        found.append(f"perft 2 {fast.perft(2)} instead of {replies}")
    return found


def check(count: int, seed: int, fen_share: float, progress: bool = False) -> tuple[int, Counter, list[str]]:
    """Compare ``count`` random positions: (positions compared, refusals by reason, mismatch reports)."""
    if compiled.cboard is None:
        raise click.ClickException(f"no compiled board to check: {compiled.why_not}")
    rng = random.Random(seed)
    games = random_games(rng)
    refused: Counter = Counter()
    reports: list[str] = []
    compared = 0
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=count, unit="pos")
    for _ in range(count):
        if rng.random() < fen_share:
            board = random_fen_board(rng)
            try:
                fast: Optional[Any] = compiled.cboard.Board.from_board(board)
            except ValueError as error:
                refused[str(error).split(": ", 1)[-1]] += 1
                fast = None
        else:
            board, fast = next(games)
        if fast is not None:
            compared += 1
            reports.extend(f"{board.fen()}{' (960)' if board.chess960 else ''}: {text}"
                           for text in mismatches(board, fast, rng.randrange(0, 12)))
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return compared, refused, reports


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--count", default=100_000, show_default=True, help="Random positions to compare.")
@click.option("--seed", default=1, show_default=True, help="Seed of the random games and FENs.")
@click.option("--fens", "fen_share", default=0.3, show_default=True, help="Share of random FENs among the positions.")
@click.option("--timings/--no-timings", default=True, show_default=True,
              help="Time perft of the start position on both paths afterwards (a quiet machine's job).")
@click.option("--depth", "depths", multiple=True, type=int, default=(5, 6), show_default=True,
              help="Perft depths timed (the pure-Python path takes minutes at 6).")
def main(count: int, seed: int, fen_share: float, timings: bool, depths: tuple[int, ...]) -> None:
    """Compare the compiled board with python-chess on random positions; print every mismatch."""
    compared, refused, reports = check(count, seed, fen_share, progress=True)
    for report in reports:
        click.echo(f"MISMATCH {report}")
    click.echo(f"{count} positions: {compared} compared, {sum(refused.values())} refused, "
               f"{len(reports)} mismatches")
    for reason, times in refused.most_common():
        click.echo(f"  refused {times}: {reason}")
    if timings:
        board = chess.Board()
        for depth in depths:
            for use_compiled, name in ((True, "compiled"), (False, "pure Python")):
                start = time.perf_counter()
                nodes = perft.perft(board, depth, use_compiled=use_compiled)
                seconds = time.perf_counter() - start
                click.echo(f"perft {depth} of the start position, {name}: {nodes} nodes in {seconds:.2f} s "
                           f"({nodes / max(seconds, 1e-9):,.0f} nodes/s)")
    if reports:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
