#!/bin/sh
# One-shot job of the compose stack (service temporal-setup, admin-tools
# image): create hookinbox's custom search attributes on the namespace.
#
# The worker registers them itself at start-up (best effort), so this is
# belt and braces: the worker starts on a namespace that is ready, and these
# are the commands an operator runs by hand where the worker lacks the
# permission (docs/production.md).
#
# Reads TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE (default "default").
set -eu

: "${TEMPORAL_ADDRESS:?TEMPORAL_ADDRESS is not set}"
NS="${TEMPORAL_NAMESPACE:-default}"
ATTRS="Provider:Keyword SourceAccount:Keyword Environment:Keyword ResourceKind:Keyword ResourceID:Keyword ExhaustedEvents:Int"

# auto-setup creates the namespace shortly after the server is healthy.
n=0
until temporal operator namespace describe --namespace "$NS" >/dev/null 2>&1; do
	n=$((n + 1))
	if [ "$n" -ge 120 ]; then
		echo "temporal-setup: namespace $NS not found on $TEMPORAL_ADDRESS after 4 minutes" >&2
		exit 1
	fi
	echo "temporal-setup: waiting for namespace $NS on $TEMPORAL_ADDRESS"
	sleep 2
done

has() {
	temporal operator search-attribute list --namespace "$NS" 2>/dev/null |
		grep -Eq "(^|[[:space:]])$1([[:space:]]|\$)"
}

for spec in $ATTRS; do
	a="${spec%%:*}"
	type="${spec#*:}"
	if has "$a"; then
		echo "temporal-setup: search attribute $a already exists"
		continue
	fi
	# A concurrent creation (the worker) makes this fail; has() settles it.
	temporal operator search-attribute create --namespace "$NS" --name "$a" --type "$type" || true
done

# Added attributes can take a few seconds to show in the list.
n=0
for spec in $ATTRS; do
	a="${spec%%:*}"
	until has "$a"; do
		n=$((n + 1))
		if [ "$n" -ge 30 ]; then
			echo "temporal-setup: search attribute $a is missing on namespace $NS" >&2
			exit 1
		fi
		sleep 1
	done
done
echo "temporal-setup: search attributes $ATTRS ready on namespace $NS"
