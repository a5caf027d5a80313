#!/usr/bin/env bash
# Renders a results folder's index.html in headless Chromium (a 1280 px wide window) and
# fails unless every image on it loaded (naturalWidth > 0), every local link opens a file,
# every in-page link finds its anchor, every figure of every experiment is on the page, and
# every figure is readable there: shown at least MIN_FIGURE_WIDTH CSS px wide, with its
# smallest text (the least font-size in the SVG, scaled by shown width / SVG width) at least
# MIN_TEXT_PX.
#
#   xtask/tests/render_index.sh [RESULTS]
#
# RESULTS is a folder written by `cargo xtask reproduce` (CI passes its quick reproduction);
# without it, a quick kernel run (seconds of work) is made in a temporary folder. The check
# runs on a copy, then shows it can fail: on the copy, a figure made unreadable and a linked
# file removed must each be reported, and so must a figure with tiny text and a page that
# shows its figures too narrow.
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

# The page's promise (xtask/src/reproduce/plot.rs: MIN_PAGE_WIDTH, and fonts chosen so
# that no text renders below 11 px at that width).
MIN_FIGURE_WIDTH=760
MIN_TEXT_PX=11

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
cat >"$work/check.js" <<EOF
const MIN_FIGURE_WIDTH = $MIN_FIGURE_WIDTH;
const MIN_TEXT_PX = $MIN_TEXT_PX;
EOF
cat >>"$work/check.js" <<'EOF'
// The smallest font-size of an SVG's text and the SVG's own width, read from the file.
function svgFonts(url) {
  const request = new XMLHttpRequest();
  request.open('GET', url, false);
  request.send();
  const svg = new DOMParser().parseFromString(request.responseText, 'image/svg+xml')
    .documentElement;
  let width = parseFloat(svg.getAttribute('width'));
  if (!(width > 0)) width = svg.viewBox.baseVal.width;
  let smallest = Infinity;
  for (const text of svg.querySelectorAll('text')) {
    const size = parseFloat(text.getAttribute('font-size') || text.style.fontSize);
    if (size > 0) smallest = Math.min(smallest, size);
  }
  return { width, smallest };
}
window.addEventListener('load', () => {
  const found = [];
  const broken = [];
  for (const img of document.images) {
    const src = img.getAttribute('src');
    found.push('IMAGE ' + src);
    if (!img.complete || img.naturalWidth === 0) {
      broken.push('image ' + src);
      continue;
    }
    if (!/\.svg$/i.test(src)) continue;
    const shown = img.getBoundingClientRect().width;
    let text = NaN;
    try {
      const fonts = svgFonts(img.src);
      text = fonts.smallest * shown / fonts.width;
    } catch (e) {
      broken.push('unreadable ' + src + ' (' + e + ')');
      continue;
    }
    found.push('SIZE ' + src + ' shown=' + shown.toFixed(0) + 'px smallest_text=' +
      text.toFixed(1) + 'px');
    if (shown < MIN_FIGURE_WIDTH) {
      broken.push('narrow ' + src + ': shown ' + shown.toFixed(0) + ' px wide, under ' +
        MIN_FIGURE_WIDTH);
    }
    if (!(text >= MIN_TEXT_PX)) {
      broken.push('small-text ' + src + ': smallest text ' + text.toFixed(1) + ' px, under ' +
        MIN_TEXT_PX);
    }
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
        --window-size=1280,1000 --hide-scrollbars \
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
    if [ "$status" = 0 ]; then
        grep '^CHECKED ' <<<"$lines"
        # The narrowest figure and the smallest text on the page.
        grep '^SIZE ' <<<"$lines" |
            sed -E 's/.* shown=([0-9.]+)px smallest_text=([0-9.]+)px/\1 \2/' |
            sort -n | awk 'NR == 1 {w = $1} {if (t == "" || $2 < t) t = $2}
                END {if (NR) printf "SIZES figures=%d narrowest=%spx smallest_text=%spx\n", NR, w, t}'
    fi
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
if [ -n "$figure" ]; then
    # Text too small to read: the same figure with every font shrunk to 5 px.
    sed -E 's/font-size="[0-9.]+"/font-size="5"/g' "$work/figure.svg" >"$figure"
    if check "$copy" >/dev/null; then
        echo "render_index: the check missed a figure with 5 px text ($figure)" >&2
        exit 1
    fi
    cp "$work/figure.svg" "$figure"
    # A page that shows its figures too narrow.
    cp "$copy/index.html" "$work/index.html"
    sed 's|</head>|<style>figure img{min-width:0 !important;width:400px !important}</style></head>|' \
        "$work/index.html" >"$copy/index.html"
    if check "$copy" >/dev/null; then
        echo "render_index: the check missed figures shown 400 px wide" >&2
        exit 1
    fi
    cp "$work/index.html" "$copy/index.html"
fi
summary="$(find "$copy" -mindepth 2 -maxdepth 2 -name summary.md | sort | head -n 1)"
if [ -n "$summary" ]; then
    rm "$summary"
    if check "$copy" >/dev/null; then
        echo "render_index: the check missed a broken link ($summary)" >&2
        exit 1
    fi
fi
echo "render_index: ok: $results/index.html (every image loaded, every local link opens, every figure at least ${MIN_FIGURE_WIDTH} px wide with text of at least ${MIN_TEXT_PX} px)"
