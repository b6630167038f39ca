#!/usr/bin/env bash
# Installs the tools the console's and /metrics' end-to-end tests use,
# from Debian's packages (docs/http.md, "Metrics" and "Console"):
#   prometheus       for `promtool check metrics` (crates/folio/tests/metrics.rs)
#   chromium         headless browser for the console's browser test
#   chromium-driver  WebDriver for it (chromedriver)
#   python3-selenium the browser test's driver library
#   python3-requests the HTTP client the console's API tests call the server with
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
    echo "run as root (apt-get)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends prometheus chromium chromium-driver python3-selenium python3-requests >/dev/null
for tool in promtool chromium chromedriver; do
    printf '%-12s %s\n' "$tool" "$(command -v "$tool" || echo MISSING)"
done
python3 -c 'import selenium; print("selenium    ", selenium.__version__)' 2>/dev/null \
    || /usr/bin/python3 -c 'import selenium; print("selenium     (system python)", selenium.__version__)' \
    || echo "selenium     MISSING"
/usr/bin/python3 -c 'import requests; print("requests    ", requests.__version__)' 2>/dev/null \
    || echo "requests     MISSING"
