# shellcheck shell=bash disable=SC2034
# Sourced by the fastchess scripts in docs/: the adjudication every match of this project uses, so that they stay in
# step with each other and with bin/match's defaults (tools/match.py Adjudication): resign when both engines see
# 1000 cp for 3 moves; draw after move 40 when both see the game within 10 cp for 8 moves.
adjudication=(-resign movecount=3 score=1000 twosided=true -draw movenumber=40 movecount=8 score=10)
