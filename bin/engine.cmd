@echo off
rem The command a Windows GUI (Arena, CuteChess) points at, like bin/engine on Linux and macOS: on first use
rem it creates .venv beside the repository with the Python launcher (py -3, else python on PATH) and installs
rem Hackmate into it; then it speaks UCI. Arguments go to `python -m engine` (e.g. --eval material).
rem Setup messages go to stderr, so that the GUI reads only UCI. Delete .venv to reinstall.
setlocal
set "root=%~dp0.."
set "venv=%root%\.venv"
if not exist "%venv%\.hackmate-runtime" (
    if not exist "%venv%\Scripts\python.exe" (
        py -3 -m venv "%venv%" 1>&2 || python -m venv "%venv%" 1>&2 || exit /b 1
    )
    "%venv%\Scripts\python.exe" -m pip install -q -e "%root%" 1>&2 || exit /b 1
    type nul > "%venv%\.hackmate-runtime"
)
cd /d "%root%"
"%venv%\Scripts\python.exe" -m engine %*
