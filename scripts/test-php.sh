#!/usr/bin/env bash
# Runs the PHP SDK's tests (sdk/php/tests, PHPUnit 9.6) twice: with ext-excimer loaded, then
# with it not loaded (the CLI's conf.d minus excimer, through PHP_INI_SCAN_DIR, so child
# processes and php-fpm started by the tests lack it too). The end-to-end test needs
# build/roottrace (run `make` first; ROOTTRACE_BIN overrides it) and fails without it here.
# Extra arguments go to phpunit (e.g. --filter Hostile).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PHP=${PHP:-php}
PHPUNIT=${PHPUNIT:-/usr/bin/phpunit}
export ROOTTRACE_E2E_REQUIRED=1
export ROOTTRACE_BIN=${ROOTTRACE_BIN:-$REPO/build/roottrace}

loaded() { "$PHP" -r 'echo extension_loaded("excimer") ? "yes" : "no";'; }

scan=$("$PHP" --ini | sed -n 's/^Scan for additional .ini files in: *//p')
noext=$(mktemp -d "${TMPDIR:-/tmp}/rt-php-noexcimer-XXXXXX")
trap 'rm -rf "$noext"' EXIT
if [ -n "$scan" ] && [ "$scan" != "(none)" ]; then
    for ini in "$scan"/*.ini; do
        [ -e "$ini" ] || continue
        grep -qi 'excimer' "$ini" || ln -s "$ini" "$noext/"
    done
fi

status=0
echo "== pass 1: with ext-excimer (loaded: $(loaded), $("$PHP" -r 'echo phpversion("excimer") ?: "-";'))"
if [ "$(loaded)" != yes ]; then
    echo "ext-excimer is not loaded by $PHP: install php-excimer (pass 1 needs it)"
    status=1
else
    "$PHP" "$PHPUNIT" --verbose -c sdk/php/phpunit.xml.dist "$@" || status=1
fi
echo
echo "== pass 2: without ext-excimer (PHP_INI_SCAN_DIR=$noext; loaded: $(PHP_INI_SCAN_DIR=$noext loaded))"
if [ "$(PHP_INI_SCAN_DIR=$noext loaded)" != no ]; then
    echo "could not unload ext-excimer (is it loaded from php.ini itself?)"
    status=1
else
    PHP_INI_SCAN_DIR=$noext "$PHP" "$PHPUNIT" --verbose -c sdk/php/phpunit.xml.dist "$@" || status=1
fi
exit $status
