#!/usr/bin/env bash
# Installs the mail clients the IMAP end-to-end tests drive (docs/mail.md,
# "IMAP"), clients nobody here wrote:
#   isync       Debian's package of mbsync, a two-way IMAP <-> Maildir
#               synchroniser (crates/folio/tests/imap_clients.rs)
#   imapclient  the PyPI IMAP library, for the same tests
#   aiosmtpd    the PyPI SMTP server the outbound tests use as the outside
#               world (crates/folio/tests/outbound.rs)
set -euo pipefail
if ! command -v mbsync >/dev/null; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "run as root (apt-get)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends isync >/dev/null
fi
if ! python3 -c 'import imapclient' 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check imapclient
fi
if ! python3 -c 'import aiosmtpd' 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check aiosmtpd
fi
printf '%-11s %s\n' mbsync "$(command -v mbsync || echo MISSING)"
python3 -c 'import imapclient; print("imapclient ", imapclient.__version__)' || echo "imapclient  MISSING"
python3 -c 'import aiosmtpd; print("aiosmtpd   ", aiosmtpd.__version__)' || echo "aiosmtpd    MISSING"
