#!/usr/bin/env bash
# Offline checks of the monitoring files (no running Prometheus needed):
#   1. promtool check config prometheus/prometheus.yml (rule paths resolve
#      relative to that file)
#   2. promtool check rules prometheus/alerts.yml
#   3. promtool test rules prometheus/alerts_test.yml (each alert fires and
#      stays quiet)
#   4. every PromQL expression of dashboards/*.json parses: they are written,
#      with $strategy/$instance set to ".*", into a temporary rule file that
#      promtool checks
#   5. every dashboard JSON against Grafana's published dashboard schema: the
#      TypeScript types of npm @grafana/schema (pinned to the Grafana image of
#      docker-compose.yml), checked by tsc with the JSON as a literal that must
#      `satisfies` Dashboard, each panel's options against its plugin's Options
#      type. Skipped, with a message, when node/npm or the registry is not
#      there; SECKILL_REQUIRE_SCHEMA=1 turns the skip into a failure.
#
# Prometheus from Debian: apt-get install -y prometheus (for promtool).
# Usage: scripts/check_dashboards.sh        (exit 0 = every check passed)
set -euo pipefail
cd "$(dirname "$0")/.."

GRAFANA_SCHEMA_VERSION="${GRAFANA_SCHEMA_VERSION:-11.4.0}"   # = grafana/grafana image tag
TYPESCRIPT_VERSION="${TYPESCRIPT_VERSION:-5.6.3}"
SCHEMA_DIR="${SECKILL_SCHEMA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/seckill-lab/grafana-schema-$GRAFANA_SCHEMA_VERSION}"

passed=0
failed=0
step() { echo "== $*"; }
pass() { echo "ok   $*"; passed=$((passed + 1)); }
flunk() { echo "FAIL $*" >&2; failed=$((failed + 1)); }

if ! command -v promtool >/dev/null; then
  echo "check_dashboards: promtool is missing — apt-get install -y prometheus" >&2
  exit 1
fi

step "promtool check config prometheus/prometheus.yml"
if promtool check config prometheus/prometheus.yml; then pass "prometheus.yml"; else flunk "prometheus.yml"; fi

step "promtool check rules prometheus/alerts.yml"
if promtool check rules prometheus/alerts.yml; then pass "alerts.yml"; else flunk "alerts.yml"; fi

step "promtool test rules prometheus/alerts_test.yml"
if promtool test rules prometheus/alerts_test.yml; then pass "alert unit tests"; else flunk "alert unit tests"; fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step "PromQL of every dashboard query parses"
python3 - "$work/dashboard_queries.yml" dashboards <<'PY'
import json, pathlib, sys
out, root = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
def walk(panels):
    for p in panels or []:
        yield p
        yield from walk(p.get("panels"))
rules = []
for path in sorted(root.rglob("*.json")):
    d = json.loads(path.read_text(encoding="utf-8"))
    exprs = [(f"{path.name} panel {p.get('id')} {t.get('refId')}", t.get("expr", ""))
             for p in walk(d.get("panels")) for t in p.get("targets") or []]
    exprs += [(f"{path.name} annotation {a.get('name')}", (a.get("target") or {}).get("expr") or a.get("expr", ""))
              for a in (d.get("annotations") or {}).get("list") or [] if not a.get("builtIn")]
    for i, (where, expr) in enumerate(exprs):
        expr = expr.replace("$strategy", ".*").replace("$instance", ".*")
        rules.append({"record": f"dashboard_query:{path.stem.replace('-', '_')}:{i}", "expr": expr,
                      "labels": {"where": where}})
# JSON is YAML: no PyYAML needed here.
out.write_text(json.dumps({"groups": [{"name": "dashboard-queries", "rules": rules}]}, indent=1))
print(f"{len(rules)} queries")
PY
if promtool check rules "$work/dashboard_queries.yml"; then pass "dashboard PromQL"; else flunk "dashboard PromQL"; fi

step "dashboards against Grafana's published schema (@grafana/schema $GRAFANA_SCHEMA_VERSION)"
schema_skip() {
  if [[ "${SECKILL_REQUIRE_SCHEMA:-0}" == 1 ]]; then flunk "schema check: $*"; else echo "SKIP schema check: $*"; fi
}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  schema_skip "node/npm not installed (apt-get install -y nodejs npm)"
else
  if [[ ! -x "$SCHEMA_DIR/node_modules/.bin/tsc" || ! -d "$SCHEMA_DIR/node_modules/@grafana/schema" ]]; then
    mkdir -p "$SCHEMA_DIR"
    [[ -f "$SCHEMA_DIR/package.json" ]] || echo '{"private": true}' > "$SCHEMA_DIR/package.json"
    echo "installing @grafana/schema@$GRAFANA_SCHEMA_VERSION typescript@$TYPESCRIPT_VERSION into $SCHEMA_DIR"
    npm install --prefix "$SCHEMA_DIR" --no-audit --no-fund --loglevel=error \
      "@grafana/schema@$GRAFANA_SCHEMA_VERSION" "typescript@$TYPESCRIPT_VERSION" >"$work/npm.log" 2>&1 \
      || { cat "$work/npm.log" >&2; true; }
  fi
  if [[ ! -x "$SCHEMA_DIR/node_modules/.bin/tsc" || ! -d "$SCHEMA_DIR/node_modules/@grafana/schema" ]]; then
    schema_skip "could not install @grafana/schema from npm (offline?)"
  else
    cat > "$SCHEMA_DIR/gen.js" <<'JS'
// Writes check.ts: each dashboard as a literal that must satisfy Grafana's
// published Dashboard type (string enums accepted as their JSON values), each
// panel's options / custom field config against its plugin's published types,
// each target against the Prometheus query fields.
const fs = require('fs');
const path = require('path');
const [outFile, ...files] = process.argv.slice(2);
const PANELCFG = {
  'stat': ['Stat', 'stat/panelcfg/x/StatPanelCfg_types.gen'],
  'timeseries': ['TimeSeries', 'timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen'],
  'state-timeline': ['StateTimeline', 'statetimeline/panelcfg/x/StateTimelinePanelCfg_types.gen'],
  'bargauge': ['BarGauge', 'bargauge/panelcfg/x/BarGaugePanelCfg_types.gen'],
  'gauge': ['Gauge', 'gauge/panelcfg/x/GaugePanelCfg_types.gen'],
  'table': ['Table', 'table/panelcfg/x/TablePanelCfg_types.gen'],
  'text': ['Text', 'text/panelcfg/x/TextPanelCfg_types.gen'],
};
let out = "import type { Dashboard, DataQuery } from '@grafana/schema';\n";
for (const [ns, p] of Object.values(PANELCFG)) {
  out += `import type * as ${ns} from '@grafana/schema/dist/esm/raw/composable/${p}';\n`;
}
out += `
type J<T> = T extends string ? \`\${T}\`
  : T extends number | boolean | null | undefined ? T
  : T extends ReadonlyArray<infer U> ? Array<J<U>>
  : T extends object ? { [K in keyof T]: J<T[K]> }
  : T;
// The Prometheus plugin's query fields on top of the common DataQuery.
type PromQuery = J<DataQuery> & {
  expr: string; legendFormat?: string; range?: boolean; instant?: boolean;
  exemplar?: boolean; editorMode?: 'code' | 'builder'; format?: 'time_series' | 'table' | 'heatmap';
  interval?: string; intervalFactor?: number;
};
type Anno = NonNullable<NonNullable<J<Dashboard>['annotations']>['list']>[number];
type PromAnnotation = Omit<Anno, 'target'> & {
  target?: PromQuery; titleFormat?: string; textFormat?: string; tagKeys?: string;
  useValueForTime?: boolean; step?: string;
};
type PromDashboard = Omit<J<Dashboard>, 'annotations'> & {
  annotations?: Omit<NonNullable<J<Dashboard>['annotations']>, 'list'> & { list?: PromAnnotation[] };
};
`;
const walk = (panels) => (panels || []).flatMap((p) => [p, ...walk(p.panels)]);
files.forEach((file, i) => {
  const d = JSON.parse(fs.readFileSync(file, 'utf8'));
  out += `\n// ${path.basename(file)}\nexport const dashboard${i} = ${JSON.stringify(d, null, 2)} satisfies PromDashboard;\n`;
  for (const p of walk(d.panels)) {
    if (p.type === 'row') continue;
    (p.targets || []).forEach((t, k) => {
      out += `export const d${i}_panel${p.id}_target${k} = ${JSON.stringify(t)} satisfies PromQuery;\n`;
    });
    const cfg = PANELCFG[p.type];
    if (!cfg) { console.log(`note: ${path.basename(file)} panel ${p.id}: no published schema for type ${p.type}`); continue; }
    if (p.options) out += `export const d${i}_panel${p.id}_options = ${JSON.stringify(p.options)} satisfies J<${cfg[0]}.Options>;\n`;
    const custom = p.fieldConfig && p.fieldConfig.defaults && p.fieldConfig.defaults.custom;
    if (custom) out += `export const d${i}_panel${p.id}_custom = ${JSON.stringify(custom)} satisfies J<${cfg[0]}.FieldConfig>;\n`;
  }
});
fs.writeFileSync(outFile, out);
console.log(`${files.length} dashboard(s) written to ${outFile}`);
JS
    mapfile -t dashboards < <(find "$PWD/dashboards" -name '*.json' | sort)
    node "$SCHEMA_DIR/gen.js" "$SCHEMA_DIR/check.ts" "${dashboards[@]}"
    cat > "$SCHEMA_DIR/tsconfig.json" <<'JSON'
{"compilerOptions": {"strict": true, "noEmit": true, "module": "commonjs", "moduleResolution": "node10",
  "target": "es2022", "skipLibCheck": true, "types": []}, "files": ["check.ts"]}
JSON
    if (cd "$SCHEMA_DIR" && ./node_modules/.bin/tsc -p tsconfig.json); then
      pass "dashboards satisfy @grafana/schema $GRAFANA_SCHEMA_VERSION"
    else
      flunk "dashboards do not satisfy @grafana/schema $GRAFANA_SCHEMA_VERSION (tsc errors above; line numbers refer to $SCHEMA_DIR/check.ts)"
    fi
  fi
fi

echo "check_dashboards: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
