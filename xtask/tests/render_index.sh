#!/usr/bin/env bash
# Renders a results folder's index.html in headless Chromium and fails unless every image on
# it loaded (naturalWidth > 0), every local link opens a file, every in-page link finds its
# anchor, and every figure of every experiment is on the page.
#
#   xtask/tests/render_index.sh [RESULTS]
#
# RESULTS is a folder written by `cargo xtask reproduce` (CI passes its quick reproduction);
# without it, a quick kernel run (seconds of work) is made in a temporary folder. The check
# runs on a copy, then shows it can fail: on the copy, a figure made unreadable and a linked
# file removed must each be reported.
#
# Needs Debian's `chromium` (apt-get install -y chromium). Without it the check is skipped
# with a message, unless CI is set: then it fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

chromium=""
for candidate in chromium chromium-browser; do
    if command -v "$candidate" >/dev/null 2>&1; then
        chromium="$candidate"
        break
    fi
done
if [ -z "$chromium" ]; then
    if [ -n "${CI:-}" ]; then
        echo "render_index: chromium not found, and CI is set: apt-get install -y chromium" >&2
        exit 1
    fi
    echo "render_index: SKIPPED: chromium not found (apt-get install -y chromium to run it)"
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ $# -ge 1 ]; then
    results="$1"
else
    results="$work/made"
    echo "render_index: making results: cargo xtask reproduce kernel --quick --out $results"
    cargo xtask reproduce kernel --quick --out "$results"
fi
if [ ! -f "$results/index.html" ]; then
    echo "render_index: $results/index.html not found" >&2
    exit 1
fi

# Runs in the page after it loaded (images included); writes its findings into the DOM,
# which --dump-dom prints.
cat >"$work/check.js" <<'EOF'
window.addEventListener('load', () => {
  const found = [];
  const broken = [];
  for (const img of document.images) {
    found.push('IMAGE ' + img.getAttribute('src'));
    if (!img.complete || img.naturalWidth === 0) broken.push('image ' + img.getAttribute('src'));
  }
  const page = location.href.split('#')[0];
  let links = 0;
  for (const a of document.links) {
    const url = new URL(a.href);
    if (url.protocol !== 'file:') continue;
    links += 1;
    if (a.href.split('#')[0] === page) {
      if (url.hash && !document.getElementById(decodeURIComponent(url.hash.slice(1)))) {
        broken.push('anchor ' + a.getAttribute('href'));
      }
      continue;
    }
    const request = new XMLHttpRequest();
    try {
      request.open('GET', a.href, false);
      request.send();
    } catch (e) {
      broken.push('link ' + a.getAttribute('href'));
    }
  }
  const report = document.createElement('pre');
  report.id = 'render-check';
  report.textContent = ['CHECKED images=' + document.images.length + ' links=' + links]
    .concat(found, broken.map((b) => 'BROKEN ' + b)).join('\n');
  document.body.append(report);
});
EOF

# Renders `$1/index.html` with the check injected; prints the check's lines.
render() {
    local dir="$1"
    cp "$work/check.js" "$dir/.render-check.js"
    sed 's|</body>|<script src=".render-check.js"></script></body>|' "$dir/index.html" \
        >"$dir/.render-check.html"
    local profile
    profile="$(mktemp -d "$work/profile.XXXXXX")"
    timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --user-data-dir="$profile" --allow-file-access-from-files \
        --virtual-time-budget=10000 --dump-dom "file://$(cd "$dir" && pwd)/.render-check.html" \
        2>"$work/chromium.log" |
        sed -n '/<pre id="render-check">/,/<\/pre>/p' |
        sed -e 's|<pre id="render-check">||' -e 's|</pre>.*||' -e 's|&lt;|<|g' -e 's|&gt;|>|g' -e 's|&amp;|\&|g'
}

# Fails (returns 1) naming what is wrong with the rendering of `$1`; quiet when all is well.
check() {
    local dir="$1" lines
    lines="$(render "$dir")"
    if ! grep -q '^CHECKED ' <<<"$lines"; then
        echo "the page did not render (chromium's log: $(tail -n 3 "$work/chromium.log"))"
        return 1
    fi
    local status=0
    if grep '^BROKEN ' <<<"$lines"; then
        status=1
    fi
    # Every experiment's figures are on the page.
    local figure
    while IFS= read -r figure; do
        figure="${figure#"$dir"/}"
        if ! grep -qxF "IMAGE $figure" <<<"$lines"; then
            echo "MISSING figure $figure"
            status=1
        fi
    done < <(find "$dir" -mindepth 2 -maxdepth 2 -name '*.svg' ! -name '.*' | sort)
    [ "$status" = 0 ] && grep '^CHECKED ' <<<"$lines"
    return "$status"
}

copy="$work/results"
cp -R "$results" "$copy"
if ! check "$copy"; then
    echo "render_index: FAILED: $results/index.html" >&2
    exit 1
fi

# The check must be able to fail: an unreadable figure and a missing linked file.
figure="$(find "$copy" -mindepth 2 -maxdepth 2 -name '*.svg' ! -name '.*' | sort | head -n 1)"
if [ -n "$figure" ]; then
    cp "$figure" "$work/figure.svg"
    echo "not an image" >"$figure"
    if check "$copy" >/dev/null; then
        echo "render_index: the check missed an unreadable figure ($figure)" >&2
        exit 1
    fi
    cp "$work/figure.svg" "$figure"
fi
summary="$(find "$copy" -mindepth 2 -maxdepth 2 -name summary.md | sort | head -n 1)"
if [ -n "$summary" ]; then
    rm "$summary"
    if check "$copy" >/dev/null; then
        echo "render_index: the check missed a broken link ($summary)" >&2
        exit 1
    fi
fi
echo "render_index: ok: $results/index.html (every image loaded, every local link opens)"
