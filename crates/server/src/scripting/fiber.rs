//! Stackful fibers for scripts.
//!
//! A script runs on a stack of its own. When it calls a command that must wait (for
//! another worker, or for a value on the data devices), the fiber suspends with the
//! command and the worker's task that drives it runs the command asynchronously, then
//! resumes the fiber with the reply. The Lua interpreter never sees the wait, so a call
//! inside `pcall` (which Lua 5.1 cannot yield across) works as in Redis.
//!
//! The `unsafe` of the scripting module lives here: the fiber's yielder is reached from
//! the Lua callbacks through a thread-local pointer, valid while the fiber runs.

use std::cell::{Cell, RefCell};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

/// Stack size of a script fiber. Lua's C calls nest at most 200 deep (LUAI_MAXCCALLS), and
/// one level can take 9 KB (`string.gsub` with a function replacement keeps an 8 KB buffer
/// on the stack): 200 such levels crashed a 1 MiB stack. The stack is reserved, not
/// committed: only the pages a script touches take memory (and the stack is kept for the
/// next script), with a guard page below.
const STACK_SIZE_BYTES: usize = 16 << 20;

/// A command a script asks its driver to run: the arguments.
pub type Call = Vec<Vec<u8>>;

/// What resumes a suspended fiber: the reply to its call, in the script's protocol.
pub type Answer = Vec<u8>;

type Co<R> = Coroutine<Answer, Call, R, DefaultStack>;

thread_local! {
    /// The yielder of the fiber running on this thread, null when none runs.
    static YIELDER: Cell<*const Yielder<Answer, Call>> = const { Cell::new(std::ptr::null()) };
    /// A stack kept for the next fiber.
    static SPARE_STACK: RefCell<Option<DefaultStack>> = const { RefCell::new(None) };
}

/// One run of a script on its own stack.
pub struct Fiber<R> {
    co: Option<Co<R>>,
    /// This fiber's yielder, once it started: set as the running one while it runs.
    yielder: std::rc::Rc<Cell<*const Yielder<Answer, Call>>>,
    /// Called when the fiber is dropped before it finished (its stack was abandoned).
    on_abandon: fn(),
}

/// The state of a fiber after it ran.
pub enum Step<R> {
    /// It asks for a command's reply.
    Call(Call),
    /// It finished.
    Done(R),
}

impl<R: 'static> Fiber<R> {
    /// A fiber that will run `f`. `on_abandon` is called if the fiber is dropped while
    /// suspended (the process is stopping): whatever `f` had on its stack is leaked, not
    /// dropped, so the interpreter it used must not be used again.
    pub fn new(f: impl FnOnce() -> R + 'static, on_abandon: fn()) -> Fiber<R> {
        let stack = SPARE_STACK
            .with(|s| s.borrow_mut().take())
            .unwrap_or_else(|| DefaultStack::new(STACK_SIZE_BYTES).expect("fiber stack"));
        let yielder = std::rc::Rc::new(Cell::new(std::ptr::null()));
        let mine = yielder.clone();
        let co = Coroutine::with_stack(stack, move |y: &Yielder<Answer, Call>, _first: Answer| {
            mine.set(y as *const _);
            YIELDER.with(|c| c.set(y as *const _));
            f()
        });
        Fiber {
            co: Some(co),
            yielder,
            on_abandon,
        }
    }

    /// Runs the fiber until it asks for a command or finishes; `answer` is the reply to its
    /// last call (empty at the start).
    pub fn resume(&mut self, answer: Answer) -> Step<R> {
        let co = self.co.as_mut().expect("a finished fiber is not resumed");
        // Fibers nest like calls on this thread: the one resumed is the running one until
        // it suspends or finishes.
        let outer = YIELDER.with(|c| c.replace(self.yielder.get()));
        let step = co.resume(answer);
        YIELDER.with(|c| c.set(outer));
        match step {
            CoroutineResult::Yield(call) => Step::Call(call),
            CoroutineResult::Return(r) => {
                let co = self.co.take().expect("just ran");
                let stack = co.into_stack();
                SPARE_STACK.with(|s| *s.borrow_mut() = Some(stack));
                Step::Done(r)
            }
        }
    }
}

impl<R> Drop for Fiber<R> {
    fn drop(&mut self) {
        if let Some(mut co) = self.co.take() {
            if co.started() && !co.done() {
                // SAFETY: the fiber is suspended inside a script call. Its stack holds Lua
                // and mlua frames whose destructors must not run now (unwinding through
                // the interpreter's C frames is not allowed); `force_reset` abandons
                // them without running anything. What they owned is leaked, and
                // `on_abandon` retires the interpreter they belonged to, so nothing
                // reaches that state again.
                unsafe { co.force_reset() };
                (self.on_abandon)();
            }
        }
    }
}

/// Suspends the running fiber with `call` and returns the reply it is resumed with; None
/// when no fiber runs on this thread (a callback reached outside a script run).
pub fn suspend(call: Call) -> Option<Answer> {
    let y = YIELDER.with(|c| c.get());
    if y.is_null() {
        return None;
    }
    // SAFETY: YIELDER is non-null only while a fiber runs on this thread (`Fiber::resume`
    // sets it to that fiber's yielder, which the body also stores at its start, and
    // restores the outer value when the fiber suspends or finishes). This call is made
    // from inside the running fiber (a Lua callback), so its yielder, which lives on the
    // fiber's stack for the whole body, is alive.
    let y = unsafe { &*y };
    Some(y.suspend(call))
}
