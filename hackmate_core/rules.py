"""The chess rules every search and evaluator shares, written once.

- **Game end by rule**: checkmate, stalemate, the fifty-move rule (a mate on
  the hundredth half-move still counts), insufficient material and repetition.
- **Repetition policy**: inside the search tree a position that repeats once is
  a draw (the side that could avoid it chose not to, as Stockfish and Lc0
  score it); the search root counts as inside the tree. Against positions of
  the game before the root the usual rule applies: a draw when the position
  occurs for the third time.
- **Legal moves** (:func:`legal_moves`): python-chess's, in its order, made
  in one pass for the searches' inner loops.
- **Mate in one** (:func:`mate_in_one`), including mates by discovered check,
  castling and en passant.

The score scale lives in :mod:`hackmate_core.score`, capture ordering and static exchange in
:mod:`hackmate_core.exchange`, tablebase probing in :mod:`hackmate_core.tablebase`.
"""

from __future__ import annotations

from typing import Hashable, Iterable, Optional, Sequence

import chess

from hackmate_core.boards import is_safe, slider_blockers, state_stack, transposition_key

# ------------------------------------------------------------- game end

def insufficient_material(board: chess.Board) -> bool:
    """Neither side can mate (python-chess's rule, skipped at once while pawns, rooks or queens remain)."""
    return not (board.pawns | board.rooks | board.queens) and board.is_insufficient_material()


def fifty_move_draw(board: chess.Board) -> bool:
    """The fifty-move rule: a hundred half-moves without capture or pawn move, unless it is checkmate."""
    return board.halfmove_clock >= 100 and not board.is_checkmate()


def repetition_draw(board: chess.Board, tree_plies: int) -> bool:
    """The repetition policy (see the module docstring) for ``board``'s move stack.

    ``tree_plies`` is how many of the last moves were played inside the search
    tree (0 at the root). Earlier positions are read from python-chess's state
    stack without unmaking moves; only a full match of the pieces is checked
    further with the exact transposition key.
    """
    clock = board.halfmove_clock
    states = state_stack(board)  # the position before each move of board.move_stack
    reach = min(clock, len(states))
    if reach < 4:
        return False
    occupied, pawns, kings = board.occupied, board.pawns, board.kings
    before_root = 0
    key: Optional[Hashable] = None
    for back in range(4, reach + 1, 2):
        state = states[-back]
        if state.occupied != occupied or state.pawns != pawns or state.kings != kings:
            continue
        if key is None:
            key = transposition_key(board)
        if _state_key(state, board.chess960) != key:
            continue
        if back <= tree_plies:
            return True
        before_root += 1
        if before_root >= 2:
            return True
    return False


def _state_key(state, chess960: bool) -> Hashable:
    scratch = chess.Board(None, chess960=chess960)
    state.restore(scratch)
    return transposition_key(scratch)


def repetition_draw_keys(keys: Sequence[int], key: int, halfmove_clock: int, tree_start: int) -> bool:
    """:func:`repetition_draw` for a search that keeps the Zobrist keys of the game and its path.

    ``keys`` holds the keys of the earlier positions in game order (the last
    one is the parent of ``key``'s position) and ``tree_start`` is the index of
    the search root in it. Same policy, for alpha-beta's inner loop.
    """
    last = len(keys) - 1
    stop = max(-1, last - halfmove_clock)
    before_root = 0
    for index in range(last - 3, stop, -2):
        if keys[index] == key:
            if index >= tree_start:
                return True
            before_root += 1
            if before_root >= 2:
                return True
    return False


def game_result(board: chess.Board, moves: Sequence[chess.Move], tree_plies: int) -> Optional[int]:
    """The result by rule for the side to move (-1: checkmated, 0: drawn), or None while the game goes on.

    ``moves`` are the position's legal moves (callers generate them anyway).
    """
    if not moves:
        return -1 if board.is_check() else 0
    if board.halfmove_clock >= 100 or insufficient_material(board) or repetition_draw(board, tree_plies):
        return 0
    return None


# ------------------------------------------------------------ legal moves

_PROMOTIONS = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)
#: Every move without promotion, made once: ``PLAIN_MOVES[origin | target << 6]``. python-chess's moves are
#: values that nothing changes, so move generators can share these instead of building some 30 a position.
PLAIN_MOVES = tuple(chess.Move(origin, target) for target in chess.SQUARES for origin in chess.SQUARES)


def legal_moves(board: chess.Board) -> list[chess.Move]:
    """``list(board.generate_legal_moves())``: equal moves in the same order, in half the time.

    python-chess chains two generators and tests every pseudo-legal move's
    safety in a call of its own; here one loop applies its rules directly: a
    pinned piece keeps only the squares on its line to the king, the king only
    squares the enemy does not attack. Positions in check (evasions),
    castling, en passant, board variants and the boards only a FEN can set up
    (no king or two kings of the side to move, pawns on a back rank) are left
    to python-chess.
    A search's leaf needs its moves every time, and this was the largest part
    of PUCT's Python per node (docs/record/bench.md).
    """
    turn = board.turn
    ours = board.occupied_co[turn]
    king_mask = board.kings & ours
    if (type(board) is not chess.Board or not king_mask or king_mask & (king_mask - 1)
            or board.pawns & chess.BB_BACKRANKS):
        # a variant, or a position set up by hand: no king or two kings, pawns on a back rank
        return list(board.generate_legal_moves())
    king = king_mask.bit_length() - 1
    if board.attackers_mask(not turn, king):
        return list(board.generate_legal_moves())
    pinned = slider_blockers(board, king)  # our pieces that alone stand between the king and a slider
    occupied, theirs, not_ours = board.occupied, board.occupied_co[not turn], ~ours
    squares, rays, plain = chess.BB_SQUARES, chess.BB_RAYS, PLAIN_MOVES
    diagonal_movers, straight_movers = board.bishops | board.queens, board.rooks | board.queens
    moves: list[chess.Move] = []
    append = moves.append
    pieces = ours & ~board.pawns
    while pieces:  # squares from high to low, as python-chess's scan_reversed
        origin = pieces.bit_length() - 1
        origin_mask = squares[origin]
        pieces ^= origin_mask
        if origin_mask & board.knights:
            targets = chess.BB_KNIGHT_ATTACKS[origin] & not_ours
        elif origin_mask & king_mask:
            targets = chess.BB_KING_ATTACKS[origin] & not_ours
            while targets:
                target = targets.bit_length() - 1
                targets ^= squares[target]
                if not board.attackers_mask(not turn, target):
                    append(plain[origin | target << 6])
            continue
        else:
            targets = 0
            if origin_mask & diagonal_movers:
                targets = chess.BB_DIAG_ATTACKS[origin][chess.BB_DIAG_MASKS[origin] & occupied]
            if origin_mask & straight_movers:
                targets |= (chess.BB_RANK_ATTACKS[origin][chess.BB_RANK_MASKS[origin] & occupied]
                            | chess.BB_FILE_ATTACKS[origin][chess.BB_FILE_MASKS[origin] & occupied])
            targets &= not_ours
        if origin_mask & pinned:
            targets &= rays[origin][king]
        while targets:
            target = targets.bit_length() - 1
            targets ^= squares[target]
            append(plain[origin | target << 6])
    if board.castling_rights & ours:
        moves.extend(board.generate_castling_moves())
    pawns = board.pawns & ours
    if not pawns:
        return moves
    pawn_attacks, back_ranks = chess.BB_PAWN_ATTACKS[turn], chess.BB_BACKRANKS
    capturers = pawns
    while capturers:
        origin = capturers.bit_length() - 1
        capturers ^= squares[origin]
        targets = pawn_attacks[origin] & theirs
        if squares[origin] & pinned:
            targets &= rays[origin][king]
        while targets:
            target = targets.bit_length() - 1
            targets ^= squares[target]
            if squares[target] & back_ranks:
                for promotion in _PROMOTIONS:
                    append(chess.Move(origin, target, promotion))
            else:
                append(plain[origin | target << 6])
    if turn == chess.WHITE:
        single = pawns << 8 & ~occupied
        double = single << 8 & ~occupied & chess.BB_RANK_4
        step = -8
    else:
        single = pawns >> 8 & ~occupied
        double = single >> 8 & ~occupied & chess.BB_RANK_5
        step = 8
    for advances, back in ((single, step), (double, 2 * step)):
        while advances:
            target = advances.bit_length() - 1
            target_mask = squares[target]
            advances ^= target_mask
            origin = target + back
            if squares[origin] & pinned and not rays[origin][king] & target_mask:
                continue
            if target_mask & back_ranks:
                for promotion in _PROMOTIONS:
                    append(chess.Move(origin, target, promotion))
            else:
                append(plain[origin | target << 6])
    if board.ep_square is not None:
        moves.extend(move for move in board.generate_pseudo_legal_ep() if is_safe(board, king, pinned, move))
    return moves


# ------------------------------------------------------------ mate in one

class LegalMoves(list):
    """The legal moves of one position, which remember what :func:`checking_moves` found for them.

    A search generates a leaf's moves once and hands them to the mate-in-one
    test and to the evaluator's heuristics; both want the checking moves.
    Build it from that position's moves only, and use it for that position only.
    """

    __slots__ = ("checks",)

    def __init__(self, moves: Iterable[chess.Move] = ()) -> None:
        super().__init__(moves)
        self.checks: Optional[list[bool]] = None


def checking_moves(board: chess.Board, moves: Sequence[chess.Move]) -> list[bool]:
    """``board.gives_check(move)`` for each of ``moves``, from bitboards.

    A plain move checks when the moved piece attacks the king from its new
    square (a slider moving along its own line to the king would already give
    check, so the current occupancy is exact); only the rare moves that can
    check otherwise (a piece leaving a line between one of our sliders and the
    king, castling, en passant, promotions) are played out. For
    :class:`LegalMoves` the answer is computed once.
    """
    if isinstance(moves, LegalMoves):
        if moves.checks is None:
            moves.checks = _checking_moves(board, moves)
        return moves.checks
    return _checking_moves(board, moves)


def _checking_moves(board: chess.Board, moves: Sequence[chess.Move]) -> list[bool]:
    us = board.turn
    king = board.king(not us)
    if king is None:
        return [False] * len(moves)
    occupied, ours = board.occupied, board.occupied_co[us]
    straight_lines = chess.BB_RANK_ATTACKS[king][0] | chess.BB_FILE_ATTACKS[king][0]
    diagonal_lines = chess.BB_DIAG_ATTACKS[king][0]
    discoverers = 0
    for sniper in chess.scan_reversed((straight_lines & (board.rooks | board.queens)
                                       | diagonal_lines & (board.bishops | board.queens)) & ours):
        blockers = chess.between(king, sniper) & occupied
        if blockers and not blockers & (blockers - 1):  # exactly one piece in between
            discoverers |= blockers & ours
    straight = (chess.BB_RANK_ATTACKS[king][chess.BB_RANK_MASKS[king] & occupied]
                | chess.BB_FILE_ATTACKS[king][chess.BB_FILE_MASKS[king] & occupied])
    diagonal = chess.BB_DIAG_ATTACKS[king][chess.BB_DIAG_MASKS[king] & occupied]
    # for each square holding one of our pieces: the squares from which that piece would check the king
    pawns, knights, bishops, rooks, queens = (board.pawns & ours, board.knights & ours, board.bishops & ours,
                                              board.rooks & ours, board.queens & ours)
    targets = [0] * 64
    for bb, target in ((pawns, chess.BB_PAWN_ATTACKS[not us][king]), (knights, chess.BB_KNIGHT_ATTACKS[king]),
                       (bishops, diagonal), (rooks, straight), (queens, straight | diagonal)):
        while bb:
            square = bb.bit_length() - 1
            bb ^= 1 << square
            targets[square] = target
    king_square = board.king(us)
    ep_square = board.ep_square if board.ep_square is not None else -1
    squares = chess.BB_SQUARES
    flags = []
    append = flags.append
    for move in moves:
        from_square, to_square = move.from_square, move.to_square
        # castling: the king two files away or onto its own rook (python-chess's is_castling for legal moves)
        if (squares[from_square] & discoverers or move.promotion or to_square == ep_square
                or from_square == king_square and (squares[to_square] & ours
                                                   or abs((from_square & 7) - (to_square & 7)) > 1)):
            append(board.gives_check(move))  # discovery, castling, promotion, en passant: rare
        else:
            append(bool(squares[to_square] & targets[from_square]))
    return flags


def mate_in_one(board: chess.Board, moves: Optional[Sequence[chess.Move]] = None) -> Optional[chess.Move]:
    """A move that checkmates at once, if the side to move has one (``moves``: its legal moves, if known).

    Every mate gives check, so only the checking moves (:func:`checking_moves`) can mate, and of those
    only the ones that leave the king no square it surely can flee to (:func:`_leaves_a_flight`) are
    played out.
    """
    moves = legal_moves(board) if moves is None else moves
    king = board.king(not board.turn)
    for move, check in zip(moves, checking_moves(board, moves)):
        if check and (king is None or not _leaves_a_flight(board, move, king)):
            board.push(move)
            mated = not any(board.generate_legal_moves())
            board.pop()
            if mated:
                return move
    return None


def _leaves_a_flight(board: chess.Board, move: chess.Move, king: chess.Square) -> bool:
    """True when, after our ``move``, the enemy ``king`` surely has a square to step to: so ``move`` does not mate.

    Our attacks after the move are over-estimated (the moved piece attacks from both squares; its
    destination and the king block no line), so a neighbouring square outside them is a real flight.
    False means "maybe no flight": the caller plays the move out. Castling, en passant and promotions,
    which change more than one square or the piece, are always played out.
    """
    if move.promotion or board.is_castling(move) or board.is_en_passant(move):
        return False
    us, from_square, to_square = board.turn, move.from_square, move.to_square
    squares = chess.BB_SQUARES
    occupied = board.occupied & ~(squares[from_square] | squares[to_square] | squares[king])
    theirs = board.occupied_co[not us] & ~squares[to_square]  # a piece captured on the destination is gone
    moved = _attacks(board.piece_type_at(from_square), us, to_square, occupied)  # type: ignore[arg-type]
    for flight in chess.scan_forward(chess.BB_KING_ATTACKS[king] & ~theirs & ~moved):
        if not board.attackers_mask(us, flight, occupied):  # our pieces where they stand, lines as above
            return True
    return False


def _attacks(piece: chess.PieceType, color: chess.Color, square: chess.Square, occupied: chess.Bitboard
             ) -> chess.Bitboard:
    """The squares a ``piece`` of ``color`` on ``square`` attacks, given ``occupied``."""
    if piece == chess.PAWN:
        return chess.BB_PAWN_ATTACKS[color][square]
    if piece == chess.KNIGHT:
        return chess.BB_KNIGHT_ATTACKS[square]
    if piece == chess.KING:
        return chess.BB_KING_ATTACKS[square]
    attacks = 0
    if piece in (chess.BISHOP, chess.QUEEN):
        attacks |= chess.BB_DIAG_ATTACKS[square][chess.BB_DIAG_MASKS[square] & occupied]
    if piece in (chess.ROOK, chess.QUEEN):
        attacks |= (chess.BB_RANK_ATTACKS[square][chess.BB_RANK_MASKS[square] & occupied]
                    | chess.BB_FILE_ATTACKS[square][chess.BB_FILE_MASKS[square] & occupied])
    return attacks
