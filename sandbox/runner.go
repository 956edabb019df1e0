package sandbox

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

// stateSource is the Python module that saves and restores a stateful
// run's state (state.py).
//
//go:embed state.py
var stateSource string

// chartSource is the chart helper a program imports as `chart`
// (chart.py): it writes a chart as a spec in [ChartSpecDir] and as a PNG.
//
//go:embed chart.py
var chartSource string

// ChartSpecDir is the folder, in the working directory, where the chart
// helper writes one JSON spec per chart, named as its PNG is (name.png,
// ChartSpecDir/name.json). The name starts with a dot: it is never
// delivered as a file.
const ChartSpecDir = ".sandpiper-charts"

// StateRunner returns the Python program a backend runs for a stateful
// run, as `python3 -c RUNNER CODE`: it runs CODE as `python3 -c CODE`
// would (see [RunCodeTail]), with the state in dir restored before and
// saved after.
func StateRunner(dir string) string {
	return "_p = dict(globals())\nimport sys\n_c = sys.argv.pop(1)\n" + RunCodeTail(dir)
}

// RunCodeTail returns the end of a Python program that runs the code in
// the variable _c as python3 -c would, keeping state when the run has any:
// the program's start set _p = dict(globals()) first thing (the __main__
// Python made) and imported sys, and may have built the state module
// ahead as _st (see [StateModuleSource]). [StateRunner] is one such
// program, the local backend's warm interpreter another.
//
// Every run can import the chart helper (chart.py) as `chart`: the
// program appends a finder to sys.meta_path that serves it when nothing
// on the path has that name (a chart.py of the program's own wins).
//
// As python3 -c would:
//
//   - the code runs in a fresh __main__ module, a copy of the one Python
//     made at start-up (__name__, __doc__, __loader__, __builtins__ ...),
//     installed in sys.modules; the program's own names stay in the old
//     one, which nothing refers to but the program's frame. sys.argv is
//     ["-c"] and sys.path[0] empty; sys.orig_argv names the run's code.
//   - it is compiled as "<string>", without the program's future flags;
//     where python3 -c gives the source to linecache for tracebacks (3.13
//     on), the program's entry is replaced by the run's, made the same way.
//   - an exception leaves through the program: Python prints it and exits
//     as for -c (exit 1, SystemExit's code, death by SIGINT after a
//     KeyboardInterrupt, atexit, threads joined, streams flushed). Only
//     the program's frame, at the top of the traceback, is cut, by a
//     wrapper around sys.excepthook put in place at that moment (a hook
//     the code set itself is kept and called).
//
// When dir (relative to the working directory the program starts in, or
// absolute) holds "max" (the run keeps state), the state module is run as
// _sandpiper_state (in sys.modules: pickle finds its reconstructors
// there), the names saved in dir/in are restored into the fresh __main__
// before the code is compiled (in a child process that then runs the
// code, the first one waiting for it and ending as it ends; within the
// memory and time "max" gives, see [StateBounds]), and the names the code
// leaves are saved to
// dir/out after it, however it ended (an exception and SystemExit
// included; not os._exit, nor a kill), before the exception is printed,
// atexit runs and threads are joined.
//
// The code's frame is called from the program's, so traceback.print_stack,
// inspect.stack and warnings with stacklevel past the code's module show
// one more "<string>" frame.
func RunCodeTail(dir string) string {
	return strings.NewReplacer("STATEDIR", pyString(dir), "STATESOURCE", pyString(stateSource), "CHARTSOURCE", pyString(chartSource)).Replace(runCodeTail)
}

// StateModuleSource returns Python that builds the state module, unused,
// as _st: a program that has time before its run (a warm interpreter)
// runs it ahead, and [RunCodeTail] then uses it.
func StateModuleSource() string {
	return strings.Replace(stateModule, "STATESOURCE", pyString(stateSource), 1)
}

const stateModule = `_st = type(sys)("_sandpiper_state")
exec(compile(STATESOURCE, "<sandpiper-state>", "exec", dont_inherit=True), _st.__dict__)
`

const runCodeTail = `class _CF:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name == "chart" and path is None:
            return type(sys.__spec__)(name, cls, origin="<sandpiper-chart>")

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(m):
        exec(compile(CHARTSOURCE, "<sandpiper-chart>", "exec", dont_inherit=True), m.__dict__)


sys.meta_path.append(_CF)
_m = type(sys)("__main__")
_m.__dict__.update({k: dict(v) if type(v) is dict else v for k, v in _p.items()})
sys.modules["__main__"] = _m
if hasattr(sys, "orig_argv"):
    sys.orig_argv = sys.orig_argv[:2] + [_c]
_sr = _sl = None
_sd = sys.modules["os"].path.abspath(STATEDIR)
try:
    with open(_sd + "/max") as _f:
        _sb = [int(_v) for _v in _f.read().split()]
    _sl = _sb[0]
except (OSError, ValueError, IndexError):
    pass
if _sl is not None:
    try:
        if globals().get("_st") is None:
            _st = type(sys)("_sandpiper_state")
            exec(compile(STATESOURCE, "<sandpiper-state>", "exec", dont_inherit=True), _st.__dict__)
        sys.modules["_sandpiper_state"] = _st
        _sr = _st.restore(_sd, _m, *_sb[1:3])
    except Exception:
        _sl = None


def _save():
    if _sl is not None and _sr is not None:
        try:
            _st.save(_sd, _m, _sl, _sr)
        except BaseException:
            pass


try:
    _x = compile(_c, "<string>", "exec", dont_inherit=True)
    _l = sys.modules.get("linecache")
    if hasattr(_l, "_register_code"):
        for _k, _v in list(_l.cache.items()):
            if len(_v) == 4 and _v[1] is None and _v[3] == "<string>":
                del _l.cache[_k]
                _l._register_code(_k if type(_k) is str else _x, _c, "<string>")
    exec(_x, _m.__dict__)
except SystemExit:
    _save()
    raise
except BaseException:
    _save()
    _h = getattr(sys, "excepthook", None)
    if _h is not None:
        def _s(t, v, tb, h=_h, f=sys._getframe()):
            while tb is not None and tb.tb_frame is f:
                tb = tb.tb_next
            if isinstance(v, BaseException):
                v.__traceback__ = tb
            if getattr(sys, "last_traceback", None) is not None:
                sys.last_traceback = tb
            sys.excepthook = h
            return h(t, v, tb)
        sys.excepthook = _s
    raise
else:
    _save()
`

// StateBounds is what a stateful run's state directory's "max" file
// holds: the most bytes the state may take, the run's memory limit, and
// the milliseconds its restore may take (half the run's time), in
// decimal, separated by spaces. The runner restores within the last two
// (see [RunCodeTail]).
func StateBounds(lim Limits) string {
	lim = lim.WithDefaults()
	return fmt.Sprintf("%d %d %d", lim.StateSize, lim.Memory, max(lim.Timeout.Milliseconds()/2, 1))
}

// pyString writes s as a Python string literal: JSON's escapes are
// Python's too.
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
