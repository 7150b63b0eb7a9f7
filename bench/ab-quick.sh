#!/bin/bash
# A/B of GET /api/me and GET /api/invoices/{uid} on one checkout (docs/performance.md#row-level-security):
#   bench/ab-quick.sh <checkout dir> <label> [pglite]
# A fresh database, remit init + seed 2,000 invoices, one keyed POST (so AsyncLocalStorage is warm, as on
# any server that has handled one), then four 6 s autocannon rounds of each request; server on CPU 0,
# autocannon on CPU 1. Run it for two checkouts alternately: the machine is noisy.

cd $1
if [ "$3" = pglite ]; then export DATA_DIR=$(mktemp -d); unset DATABASE_URL; else export DATABASE_URL=postgres://postgres@127.0.0.1:5432/rlsq; fi
export SECRET_KEY=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8= PORT=3998 LOG_LEVEL=warn RUN_WORKERS=false RATE_LIMIT_MAX=100000000 HOST=127.0.0.1
[ "$3" = pglite ] || psql -h 127.0.0.1 -U postgres -qc "drop database if exists rlsq with (force)" -c "create database rlsq" 2>/dev/null
node bin/remit.js init --org Q --email q@x.test --json > /tmp/q-init.json 2>/dev/null
ORG=$(node -e "console.log(require('/tmp/q-init.json').organization_uid)"); KEY=$(node -e "console.log(require('/tmp/q-init.json').api_key)")
node bin/remit.js seed --org $ORG --invoices 2000 --parties 500 --ap-ratio 1 >/dev/null 2>&1
INV=""
taskset -c 0 npx tsx src/server.ts > /tmp/q-serve.log 2>&1 &
for i in $(seq 1 60); do curl -sf http://127.0.0.1:3998/healthz >/dev/null && break; sleep 0.5; done
INV=$(curl -s -H "Authorization: Bearer $KEY" "http://127.0.0.1:3998/api/organization/$ORG/ap-invoices?per_page=1" | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(JSON.parse(s).items[0].uid))")
echo "invoice $INV $(curl -s -o /dev/null -w %{http_code} -H "Authorization: Bearer $KEY" http://127.0.0.1:3998/api/invoices/$INV)"
curl -s -o /dev/null -X POST -H "Authorization: Bearer $KEY" -H "Idempotency-Key: warm-$RANDOM" -H "content-type: application/json" -d "{\"name\":\"Warm\",\"role\":\"client\"}" http://127.0.0.1:3998/api/parties -w "warm POST %{http_code}\n"
for round in 1 2 3 4; do
  me=$(taskset -c 1 npx autocannon -j -c 10 -d 6 -H "Authorization=Bearer $KEY" http://127.0.0.1:3998/api/me 2>/dev/null | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const r=JSON.parse(s);console.log(r.requests.average, r.latency.p50, r.latency.p99)})")
  inv=$(taskset -c 1 npx autocannon -j -c 1 -d 6 -H "Authorization=Bearer $KEY" http://127.0.0.1:3998/api/invoices/$INV 2>/dev/null | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const r=JSON.parse(s);console.log(r.requests.average, r.latency.p50, r.latency.p99)})")
  echo "$2 round $round: me $me | invoice c1 $inv"
done
pkill -f "tsx src/server.ts"; sleep 1
