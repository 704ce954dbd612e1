# Sourced by the suites that run Python (ci/mcp, ci/seal, ci/embed, ci/python):
#
#   venv_with VENV REQUIREMENTS [PIP ARGUMENTS...]
#
# makes the virtualenv VENV with $PYTHON (default python3) when it has none, and
# installs the pins of the file REQUIREMENTS (then PIP ARGUMENTS, in a second pip
# install, when given) when they changed since the last install.
venv_with() {
    local venv="$1" req="$2"
    shift 2
    if [ ! -x "$venv/bin/python" ]; then
        "${PYTHON:-python3}" -m venv "$venv"
    fi
    # Reinstall only when the pins changed.
    local stamp="$venv/.requirements"
    if ! cmp -s "$req" "$stamp" 2>/dev/null; then
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
        if [ "$#" -gt 0 ]; then
            "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
        fi
        cp "$req" "$stamp"
    fi
}
