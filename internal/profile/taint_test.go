package profile

import (
	"testing"
)

// Discovery code that only steers control flow, or whose result is replaced
// by a literal default, must evaluate to the defaults.
func TestDiscoveryFallsBackToDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         []Var
	}{
		{"loop over a refused listing", `
nics=eth1
for n in $(ls /sys/class/net 2>/dev/null); do
  slot=$(cat /sys/class/net/$n/device/uevent | grep PCI_SLOT_NAME | awk -F= '{print $2}')
  nics="$nics,$n"
done
export NICS=$nics
`, vars("NICS=eth1")},
		{"if on a refused probe", `
if ls /sys/class/net/eth9 >/dev/null 2>&1; then nic=eth9; else nic=eth0; fi
export NIC=$nic
`, vars("NIC=eth0")},
		{"fallback default over an empty result", `
found=$(ls /sys/class/net | head -1)
export NIC=${found:-eth0}
`, vars("NIC=eth0")},
		{"empty test then default", `
found=$(ls /sys/class/net | head -1)
if [ -z "$found" ]; then found=eth0; fi
export NIC=$found
`, vars("NIC=eth0")},
		{"or-default", `
nic=$(cat /sys/class/net/eth0/address) || nic=unknown
export NIC=$nic
`, vars("NIC=unknown")},
		{"assign-default", `
found=$(ls /x)
: "${found:=eth0}"
export NIC=$found
`, vars("NIC=eth0")},
		{"case on a refused probe", `
slot=$(cat /sys/class/net/eth0/device/uevent)
case "$slot" in
  *:00:*) host=eth0 ;;
  *) host=eth1 ;;
esac
export HOST=$host
`, vars("HOST=eth1")},
		{"glob over an empty file system", `
count=0
for f in /sys/class/net/*; do [ -e "$f" ] && count=$((count + 1)); done
export COUNT=$count
`, vars("COUNT=0")},
		{"unset variables in tests", `
if [ -z "$OPTIONAL_THING" ] && [[ -z $ALSO_OPTIONAL ]] && ! test -n "$THIRD"; then mode=default; fi
export MODE=$mode
`, vars("MODE=default")},
		{"defaults for unset variables", `
export A=${NOT_SET:-a} B=${NOT_SET-b} C=${NOT_SET:+c} D=${NOT_SET=d}
`, vars("A=a", "B=b", "C=", "D=d")},
		{"refused output that is only printed", `
echo "running on $(hostname)" >&2
export A=1
`, vars("A=1")},
		{"clean reassignment clears", `
x=$(curl http://metadata/x)
x=fallback
export X=$x
`, vars("X=fallback")},
		{"unset then reassign clears", `
x=$(curl http://metadata/x)
unset x
export X=${x:-fallback}
`, vars("X=fallback")},
		{"prefix assignment is temporary", `
X=$(curl x) true
export Y=${X:-y}
`, vars("Y=y")},
		{"function with a clean argument", `
set_nic() { export NIC=$1; }
set_nic "$(echo eth3)"
`, vars("NIC=eth3")},
		{"local hides nothing from the global", `
x=clean
f() { local x=$(curl x); : "$x"; }
f
export X=$x
`, vars("X=clean")},
		{"subshell taint stays in the subshell", `
x=clean
( x=$(curl x) )
export X=$x
`, vars("X=clean")},
		{"command lookup finds builtins and functions", `
probe() { :; }
command -v printf >/dev/null && command -v probe >/dev/null && have=yes
export HAVE=$have
`, vars("HAVE=yes")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertVars(t, mustEvaluate(t, tc.script, Options{}), tc.want)
		})
	}
}

func TestPipelinesRunConcurrently(t *testing.T) {
	// Both sides of a pipe call the sandbox at once; run under -race.
	res := mustEvaluate(t, `
a=$(echo one | { read x; echo "$x-two"; })
for i in 1 2 3 4 5 6 7 8; do
  b=$(ls /sys/class/net/eth$i 2>/dev/null | grep x | awk '{print}' | sort)
done
export A=$a B=${b:-none}
`, Options{})
	assertVars(t, res, vars("A=one-two", "B=none"))
}

// Interpreter features a profile may use, each evaluated to what bash gives.
func TestShellFeatures(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         []Var
	}{
		{"exec keeps its redirections", "exec 2>/dev/null\nls /x || true\nexport A=1\n", vars("A=1")},
		{"both outputs closed", "{ x=1; } >&- 2>&-\nls /x >&- 2>&- || true\nexport X=$x\n", vars("X=1")},
		{"positional parameters", "set -- a b c\nshift\nexport X=$1 N=$# ALL=\"$*\"\n", vars("X=b", "N=2", "ALL=b c")},
		{"arithmetic", "(( n = 3 ))\nlet m=n+1\nk=1\n(( k++ ))\nexport N=$n M=$m K=$k P=$(( (n + m) * 2 ))\n", vars("N=3", "M=4", "K=2", "P=14")},
		{"nameref", "declare -n ref=T\nT=ok\nexport X=$ref\n", vars("X=ok")},
		{"indirect", "T=ok\nref=T\nexport X=${!ref}\n", vars("X=ok")},
		{"[[ ]] features", "[[ abc =~ b(c) ]] && export M=${BASH_REMATCH[1]}\n[[ -v UNSET_VAR ]] || export V=no\n", vars("M=c", "V=no")},
		{"mapfile from a denied file, with a default", "mapfile -t arr < /etc/x || true\nexport A=${arr[0]:-none}\n", vars("A=none")},
		{"resetting a trap", "trap - EXIT\nexport A=1\n", vars("A=1")},
		{"type", "f() { :; }\ntype f >/dev/null\nt=$(type -t f)\nexport T=$t\n", vars("T=function")},
		{"getopts", "getopts ab: opt -a\nexport O=$opt\n", vars("O=a")},
		{"computed declaration", "name=D\ndeclare \"$name=v\"\nexport D\n", vars("D=v")},
		{"parameter operations", "v=abc\nexport S=${v:1:1} R=${v/b/X} U=${v^^} L=${#v} P=${v#a}\n", vars("S=b", "R=aXc", "U=ABC", "L=3", "P=bc")},
		{"readonly", "readonly R=1\nR=2 || true\nexport R\n", vars("R=1")},
		{"right side of a pipe runs in this shell", "printf '%s\\n' a b | while read l; do last=$l; done\nexport L=$last\n", vars("L=b")},
		{"here-document", "read -r first <<EOF\n$NCCL_LIB_DIR/x\nEOF\nexport F=$first\n", vars("F=/usr/local/nvidia/lib64/x")},
		{"case patterns", "nic=eth3\ncase $nic in eth[1-8]) kind=gpu ;; *) kind=host ;; esac\nexport K=$kind\n", vars("K=gpu")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertVars(t, mustEvaluate(t, tc.script, Options{}), tc.want)
		})
	}
}
