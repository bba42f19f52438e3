"""Protocol fuzzing: thousands of random, broken and mutated lines, commands during searches.

The engine must never report an internal error, never hang, answer every
`go` with a legal bestmove, and still play a legal move at the end.
"""

from __future__ import annotations

import random
import string

import chess

from tests.uci_inprocess import Driver

SEED = 20240607
LINES = 3000

FENS = [chess.STARTING_FEN, "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 0 1",
        "8/P1k5/8/3pP3/8/8/5p2/4K3 w - d6 0 1", "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1",
        "7k/8/8/8/8/8/8/K6Q w - - 99 80", "8/8/8/4k3/8/8/8/R3K3 w - - 0 1",
        "bqnbrkr1/pppppppp/8/8/8/8/PPPPPPPP/BQNBRK1R w HEge - 0 1"]
OPTIONS = {
    "Hash": ["1", "2", "16", "0", "-5", "99999999999999999999", "lots"],
    "Threads": ["1", "2", "0", "129", "x"],
    "MultiPV": ["1", "3", "64", "65", ""],
    "Move Overhead": ["0", "50", "5000", "-1"],
    "Ponder": ["true", "false", "maybe"],
    "UCI_ShowWDL": ["true", "false"],
    "UCI_Chess960": ["true", "false", "1"],
    "SyzygyPath": ["", "/no/such/dir", "../shared/data/syzygy", "<empty>"],
    "OwnBook": ["true", "false"],
    "BookFile": ["", "/no/such.bin", "README.md"],
    "Weights": ["", "/no/such.onnx", "README.md"],
    "Clear Hash": [""],
    "Evaluator": ["material", "pst", "pst", "material", "comparator", "resnet", "quantum"],
    "Search": ["alphabeta", "puct", "comparison", "bogo"],
    "CPuct": ["10", "250", "1000", "1001", "abc"],
    "FpuReduction": ["0", "200", "-1"],
    "MinibatchSize": ["0", "1", "8", "300"],
    "PolicyTemperature": ["10", "150", "9"],
    "TacticalPriors": ["0", "100", "101"],
    "MaterialBlend": ["0", "60", "x"],
    "Quiescence": ["true", "false"],
    "IncrementalAccumulator": ["true", "false"],
    "NoSuchOption": ["3"],
}
GO_WORDS = ["depth", "nodes", "movetime", "wtime", "btime", "winc", "binc", "movestogo", "mate"]
NUMBERS = ["0", "1", "2", "3", "5", "20", "100", "-1", "-100", "99999999999999999999999", "1e9", "abc", ""]


def random_moves(rng: random.Random, board: chess.Board, count: int) -> list[str]:
    moves = []
    board = board.copy()
    for _ in range(count):
        legal = list(board.legal_moves)
        if not legal or rng.random() < 0.05:
            moves.append(rng.choice(["e2e5", "a1a9", "e7e8k", "0000", "zz", "e1g1"]))  # illegal or nonsense
            break
        move = rng.choice(legal)
        moves.append(move.uci())
        board.push(move)
    return moves


def valid_line(rng: random.Random) -> str:
    kind = rng.choices(["position", "go", "setoption", "stop", "isready", "ucinewgame", "ponderhit", "d", "uci",
                        "debug", "quit"], [20, 20, 18, 8, 6, 3, 3, 2, 1, 1, 1])[0]
    if kind == "position":
        fen = rng.choice(FENS)
        base = "startpos" if rng.random() < 0.5 else "fen " + fen
        board = chess.Board() if base == "startpos" else chess.Board(fen, chess960=True)
        moves = random_moves(rng, board, rng.randrange(0, 12))
        return f"position {base}" + (" moves " + " ".join(moves) if moves else "")
    if kind == "go":
        words = ["go"]
        for _ in range(rng.randrange(0, 4)):
            choice = rng.random()
            if choice < 0.1:
                words.append("infinite")
            elif choice < 0.15:
                words.append("ponder")
            elif choice < 0.25:
                words += ["searchmoves"] + random_moves(rng, chess.Board(), 1) + rng.sample(["e2e4", "d2d4", "g1f3",
                                                                                             "a7a5", "h1h8"], 2)
            else:
                word = rng.choice(GO_WORDS)
                words += [word, str(rng.choice([1, 2, 3, 50, 200, 1000]))] if rng.random() < 0.8 else \
                    [word, rng.choice(NUMBERS)]
        if len(words) == 1 or all(w in ("ponder",) for w in words[1:]):
            words += ["nodes", str(rng.choice([50, 300]))]  # a bare go would wait for stop: still fine, but slow
        return " ".join(words)
    if kind == "setoption":
        name = rng.choice(list(OPTIONS))
        value = rng.choice(OPTIONS[name])
        return f"setoption name {name}" + (f" value {value}" if value or rng.random() < 0.5 else "")
    return kind


def mutate(rng: random.Random, line: str) -> str:
    tokens = line.split()
    for _ in range(rng.randrange(1, 4)):
        operation = rng.randrange(6)
        if operation == 0 and tokens:
            del tokens[rng.randrange(len(tokens))]
        elif operation == 1 and tokens:
            tokens.insert(rng.randrange(len(tokens) + 1), rng.choice(tokens))
        elif operation == 2 and len(tokens) > 1:
            i, j = rng.randrange(len(tokens)), rng.randrange(len(tokens))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif operation == 3 and tokens:
            tokens[rng.randrange(len(tokens))] = rng.choice(NUMBERS + ["fen", "moves", "value", "name", "\x00"])
        elif operation == 4:
            tokens.insert(rng.randrange(len(tokens) + 1), "".join(rng.choices(string.printable.strip(), k=8)))
        else:
            tokens = tokens[: rng.randrange(len(tokens) + 1)]
    return " ".join(tokens)


def garbage(rng: random.Random) -> str:
    return rng.choice(["".join(rng.choices(string.printable, k=rng.randrange(0, 60))),
                       "   ", "", "x" * 5000, "position fen " + "/".join(["8"] * 12), "go " * 50,
                       "setoption name", "setoption value 3", "position fen", "position startpos moves",
                       "\t\tisready\t", "go depth 99999999999999999999999999999999"])


def fuzz(driver: Driver, rng: random.Random, lines: int, wait_s: float) -> list[chess.Board]:
    """Send ``lines`` lines, most valid, some mutated, some garbage, then stop and wait up to ``wait_s`` for the
    search; the positions that searches started from."""
    engine = driver.engine
    searched: list[chess.Board] = []
    for _ in range(lines):
        roll = rng.random()
        line = valid_line(rng) if roll < 0.6 else mutate(rng, valid_line(rng)) if roll < 0.9 else garbage(rng)
        before = engine.thread
        engine.handle(line)
        if engine.thread is not before and engine.thread is not None:
            searched.append(engine.board.copy())
    engine.handle("stop")
    assert engine.wait(wait_s)
    return searched


def test_protocol_fuzz(lenient):
    """Lenient: the fuzz sends weights that do not load and searches that do not fit the evaluator, whose fallbacks
    are right; the engine's own failures (an exception, an illegal answer replaced) are looked for below."""
    rng = random.Random(SEED)
    driver = Driver("--eval", "material", "--search", "alphabeta")
    engine = driver.engine
    searched_boards = fuzz(driver, rng, LINES, 30)
    engine.handle("setoption name Evaluator value material")
    engine.handle("setoption name Search value alphabeta")
    engine.handle("position startpos moves e2e4")
    best = driver.go("go depth 2")
    searched_boards.append(chess.Board())
    searched_boards[-1].push_uci("e2e4")

    problems = [line for line in driver.lines
                if "error in" in line or "search failed" in line or "not a legal move in" in line]
    assert not problems, problems[:5]
    bestmoves = [line.split()[1] for line in driver.lines if line.startswith("bestmove")]
    assert len(bestmoves) == len(searched_boards)
    for board, move in zip(searched_boards, bestmoves):
        assert move != "0000" or not any(board.legal_moves)
        if move != "0000":
            assert board.parse_uci(move) in board.legal_moves, (board.fen(), move)
    assert best.split()[1] in {m.uci() for m in searched_boards[-1].legal_moves}
