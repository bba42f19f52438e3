"""The ground floor: chess rules, the score scale, options, tablebases and caches that every level above shares.

Nothing here imports from evaluators/, search/, engine/, training/ or tools/.
"""
