#!/usr/bin/env bash
# Debian's chromium, for the Control Plane console's browser test (Playwright for Python drives it
# through executable_path; Playwright's own browser download is not used). Installed once with
# apt-get when missing (needs root); instant afterwards.
# Usage: chromium.sh   (prints the browser's path)
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/common.sh"

CHROMIUM="${MNEMO_CHROMIUM:-/usr/bin/chromium}"

if [ ! -x "$CHROMIUM" ]; then
    say "chromium: not installed; installing Debian's chromium package (once)"
    if [ "$(id -u)" -ne 0 ]; then
        fail "chromium is missing and installing it needs root: run 'sudo apt-get install chromium'"
    fi
    mkdir -p "$MNEMO_LOGS"
    {
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
    } >"$MNEMO_LOGS/chromium-install.log" 2>&1 || fail "apt-get install chromium failed" "$MNEMO_LOGS/chromium-install.log"
    [ -x "$CHROMIUM" ] || fail "the chromium package installed no $CHROMIUM"
fi
printf '%s\n' "$CHROMIUM"
