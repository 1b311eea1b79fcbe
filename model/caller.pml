/*
 * Operations the caller executes, as SPIN checks them: one idempotency key, two callers with the same
 * key and arguments (two agents, or one agent and its restart), the reconciler and the clock.
 *
 * The ledger holds the record; the callers run the effect. Every message a caller sends (claim,
 * heartbeat, outcome, verdict) can be lost on the way, answered with an answer that is lost, delayed
 * so that it arrives after the caller gave up on it, or duplicated (a second copy arrives later). A
 * caller's process can crash between any two steps; it then starts over, as a restarted agent does,
 * with a new claim_id. A caller that lost an answer sends the same request again (the same claim_id,
 * the same token).
 *
 * Every `atomic` block that writes the record is ONE conditional write, whose guard is the condition
 * the code sends (functions/engine/caller-submit.ts, caller-heartbeat.ts, caller-outcome.ts,
 * caller-verdict.ts, reconcile.ts) and whose move is checked against the generated table of
 * functions/domain/states.ts (transitions.pml).
 *
 * A claim token is (claim_id, attempt, reservation): derived from them when the request carries a
 * claim_id, so the record's lease owner (its hash) matches a token only of that claim. Here `owner`
 * holds the claim_id of the claim the record holds, and a token matches when all three agree.
 *
 * Switches (spin -D): ONE_CALLER leaves the second caller out (for the runs that reuse the key after
 * expiry, where one caller's later run is the new operation); MAXRESV, MAXATT, MAXCLAIMS bound; IDEM (the operation is declared downstream_idempotent: the target dedupes on
 * the downstream key); BROKEN_* are deliberately wrong variants SPIN must refute
 * (scripts/verify/caller-checks.ts), run with NO_TABLE_ASSERTS.
 */

#include "transitions.pml"

/* ---- bounds ---- */
#ifndef MAXATT
#define MAXATT    2   /* the operation's max_attempts */
#endif
#ifndef MAXRESV
#define MAXRESV   2   /* reservations of the key: the first and one reuse after expiry */
#endif
#ifndef MAXCLAIMS
#define MAXCLAIMS 2   /* runs of ledger.run per caller (each with its own claim_id) */
#endif
#define MAXCHK    2   /* reconcile passes answering unknown before an operator decides */
#ifndef MAXCRASH
#define MAXCRASH  1   /* caller crashes in one run */
#endif
#ifndef MAXLOSS
#define MAXLOSS   1   /* requests or answers lost in one run */
#endif
#ifndef MAXLATE
#define MAXLATE   1   /* requests delayed or duplicated in one run */
#endif

/* what a caller sends */
#define M_CLAIM   1
#define M_BEAT    2
#define M_OUT     3
#define M_VERDICT 4

/* what it hears back */
#define R_LOST    1   /* nothing: the request or its answer was lost, or it is late */
#define R_CLAIM   2   /* 200 + claim */
#define R_DONE    3   /* 201 replay (terminal) */
#define R_WAIT    4   /* 202 / 409 in progress: the state it is in comes with it */
#define R_OK      5   /* 200 to a heartbeat, outcome or verdict */
#define R_CHANGED 6   /* 409 state_changed */

/* ---- the record ---- */
byte st = S_none;   /* state */
byte att;           /* attempt */
byte owner;         /* lease_owner: the claim_id of the claim it holds */
bool leaseExp;      /* lease_expires_at < now */
bool expd;          /* terminal and expires_at < now: treated as absent */
byte resv;          /* reservation_id (1, 2) */
byte chk;           /* reconcile_checks */
bool mayApplied;    /* an uncertain attempt was retried on the target's dedupe */
byte outBy;         /* outcome_by: the claim whose outcome is stored */

/* ---- the world ---- */
bool idem;          /* downstream_idempotent: the target dedupes on the downstream key */
bool tseen[3];      /* downstream keys (one per reservation) the target has seen */
byte crashes;
byte loss;          /* requests or answers lost */
byte lateUsed;      /* requests delayed or duplicated */

/* the one request in the network that arrives late (0: none) */
byte lateKind, lateCid, lateA, lateR, lateOut;
bool lateV;

/* the request being handled and its answer: set and cleared inside one atomic step */
byte rqKind, rqCid, rqA, rqR, rqOut;
bool rqV;
byte rsKind, rsA, rsR, rsSt;

/* ---- ghosts: what the properties talk about ---- */
byte applied[3];    /* effects per reservation (a deduped retry is not a new effect) */
byte holds[3];      /* the claim caller c holds while its execute may run: 16 * reservation + attempt (0: none) */
bool effAfterTerminal; /* an effect of a reservation ran while its record was terminal */
bool outOther;      /* an outcome was stored on a record of another reservation or attempt than its token's */
bool verdictOther;  /* a verdict was stored on another reservation or attempt than the one checked */
byte outAtt;        /* attempt whose outcome the record holds (0: none) */

#define ALIVE(s) (s != S_none && !(TERMINAL(s) && expd))
/*
 * Caller c holds a live claim: the record holds its claim, pending, its lease not expired. The caller's
 * clock compares with the lease_expires_at it was given (and its heartbeats extended), the record's.
 */
#define LIVE(c) (holds[c] != 0 && holds[c] == 16 * resv + att && st == S_pending && !leaseExp)
#define KNOWN(o) (o == S_succeeded || o == S_failed_terminal)
#define LATE_STATE(s) (s == S_uncertain || s == S_needs_reconciliation || s == S_failed_retryable)

/* Every write: the table allows it. */
#ifdef NO_TABLE_ASSERTS
#define CHECKED(allowed) skip
#else
#define CHECKED(allowed) assert(allowed)
#endif

/* The request's token is the record's claim: lease_owner = hash(token). */
#ifdef BROKEN_OUTCOME_NO_TOKEN
#define TOKEN_MATCHES (att == rqA)
#else
#define TOKEN_MATCHES (owner == rqCid && att == rqA && resv == rqR)
#endif

/* A repeated claim request with a claim_id gets the live claim back only if it made that claim. */
#ifdef BROKEN_CLAIM_ANY_ID
#define SAME_CLAIM_ID (true)
#else
#define SAME_CLAIM_ID (owner == rqCid)
#endif

/* A verdict names the reservation it checked (its downstream key) and the attempt. */
#ifdef BROKEN_VERDICT_ANY_RESV
#define VERDICT_FOR_ME (att == rqA)
#else
#define VERDICT_FOR_ME (resv == rqR && att == rqA)
#endif

/* The claim write: attempt + 1, a new lease owner, a live lease. */
#define CLAIM_WRITE \
  CHECKED(FROM_claim(st) && TO_claim(S_pending) && BY_claim(ACT_worker)); \
  st = S_pending; att = att + 1; owner = rqCid; leaseExp = false; chk = 0; outAtt = 0; outBy = 0; \
  rsKind = R_CLAIM; rsA = att; rsR = resv

/* Exhausted attempts: failed_terminal only when no attempt may have applied. */
#define EXHAUST(act) \
  if \
  :: mayApplied -> CHECKED(FROM_exhaust_attempts(st) && TO_exhaust_attempts(S_needs_reconciliation) && BY_exhaust_attempts(act)); st = S_needs_reconciliation \
  :: else -> CHECKED(FROM_exhaust_attempts(st) && TO_exhaust_attempts(S_failed_terminal) && BY_exhaust_attempts(act)); st = S_failed_terminal \
  fi

/* POST /v1/operations, execution "caller", with claim_id rqCid. */
inline handle_claim() {
  if
  :: !ALIVE(st) && resv < MAXRESV ->
     /* reserve directly into pending, attempt 1, the claim's lease */
     CHECKED(FROM_reserve_pending(S_none) && TO_reserve_pending(S_pending) && BY_reserve_pending(ACT_reserve));
     resv++; st = S_pending; att = 1; owner = rqCid; leaseExp = false; expd = false; chk = 0;
     mayApplied = false; outAtt = 0; outBy = 0;
     rsKind = R_CLAIM; rsA = 1; rsR = resv
  :: !ALIVE(st) && resv >= MAXRESV -> rsKind = R_DONE     /* the model's bound: no third reservation */
  :: ALIVE(st) && TERMINAL(st) -> rsKind = R_DONE          /* 201 replay */
  :: ALIVE(st) && st == S_failed_retryable && att >= MAXATT ->
     EXHAUST(ACT_worker);
     if :: TERMINAL(st) -> rsKind = R_DONE :: else -> rsKind = R_WAIT; rsA = att; rsR = resv; rsSt = st fi
  :: ALIVE(st) && (st == S_queued || (st == S_failed_retryable && att < MAXATT)) -> CLAIM_WRITE
  :: ALIVE(st) && st == S_pending && !leaseExp && SAME_CLAIM_ID ->
     rsKind = R_CLAIM; rsA = att; rsR = resv                 /* the same claim again */
  :: else -> rsKind = R_WAIT; rsA = att; rsR = resv; rsSt = st   /* 409 in progress, 202 */
  fi
}

/* POST /{id}/lease: a live claim of this token is extended (the model's lease keeps its expiry). */
inline handle_beat() {
  if
  :: ALIVE(st) && st == S_pending && !leaseExp && owner == rqCid && att == rqA && resv == rqR ->
     CHECKED(FROM_extend_lease(st) && TO_extend_lease(st) && BY_extend_lease(ACT_owner));
     rsKind = R_OK
  :: else -> rsKind = R_CHANGED
  fi
}

/* POST /{id}/outcome: §3 step 6, the lease owner being the token's hash. */
inline handle_outcome() {
  if
  :: ALIVE(st) && TOKEN_MATCHES && outBy == rqCid && st == rqOut -> rsKind = R_OK; rsSt = st   /* the same again */
  :: ALIVE(st) && TOKEN_MATCHES && !(outBy == rqCid && st == rqOut) && st == S_pending ->
     CHECKED(FROM_record_outcome(st) && TO_record_outcome(rqOut) && BY_record_outcome(ACT_owner));
     if :: rqR != resv || rqA != att -> outOther = true :: else -> skip fi;
     st = rqOut; outBy = rqCid; outAtt = rqA; rsKind = R_OK; rsSt = st; rsA = att; rsR = resv
  :: ALIVE(st) && TOKEN_MATCHES && !(outBy == rqCid && st == rqOut) && KNOWN(rqOut) && LATE_STATE(st) ->
     CHECKED(FROM_record_late_outcome(st) && TO_record_late_outcome(rqOut) && BY_record_late_outcome(ACT_late_owner));
     if :: rqR != resv || rqA != att -> outOther = true :: else -> skip fi;
     st = rqOut; outBy = rqCid; outAtt = rqA; rsKind = R_OK; rsSt = st; rsA = att; rsR = resv
  :: else -> rsKind = R_CHANGED   /* another or a superseded claim (kept as late_outcome), or already decided */
  fi
}

/* POST /{id}/reconciliation: applied or not applied, for the attempt and reservation checked. */
inline handle_verdict() {
  if
  :: ALIVE(st) && (st == S_uncertain || st == S_needs_reconciliation) && VERDICT_FOR_ME ->
     if :: rqR != resv || rqA != att -> verdictOther = true :: else -> skip fi;
     if
     :: rqV -> CHECKED(FROM_caller_verdict(st) && TO_caller_verdict(S_succeeded) && BY_caller_verdict(ACT_caller)); st = S_succeeded
     :: !rqV -> CHECKED(FROM_caller_verdict(st) && TO_caller_verdict(S_failed_retryable) && BY_caller_verdict(ACT_caller)); st = S_failed_retryable
     fi;
     outAtt = 0; rsKind = R_OK; rsSt = st; rsA = att; rsR = resv
  :: else -> rsKind = R_CHANGED   /* the same verdict again is 200 in the code; the caller acts the same on both */
  fi
}

inline handle() {
  if
  :: rqKind == M_CLAIM -> handle_claim()
  :: rqKind == M_BEAT -> handle_beat()
  :: rqKind == M_OUT -> handle_outcome()
  :: rqKind == M_VERDICT -> handle_verdict()
  fi
}

#define CLEAR_RQ rqKind = 0; rqCid = 0; rqA = 0; rqR = 0; rqOut = 0; rqV = false
#define CLEAR_RS rsKind = 0; rsA = 0; rsR = 0; rsSt = 0
#define TO_LATE lateUsed++; lateKind = rqKind; lateCid = rqCid; lateA = rqA; lateR = rqR; lateOut = rqOut; lateV = rqV

/*
 * One request of caller `me` and what it hears: answered; lost on the way; handled with its answer
 * lost; delayed past the caller's patience (it arrives later, see Network); handled and duplicated (a
 * second copy arrives later). Used inside the caller's atomic steps.
 */
#define SEND(kind, a, r, o, v) \
    rqKind = kind; rqCid = cid; rqA = a; rqR = r; rqOut = o; rqV = v; \
    if \
    :: handle(); rk = rsKind \
    :: loss < MAXLOSS -> loss++; rk = R_LOST \
    :: loss < MAXLOSS -> loss++; handle(); rk = R_LOST \
    :: lateUsed < MAXLATE && lateKind == 0 -> TO_LATE; rk = R_LOST \
    :: lateUsed < MAXLATE && lateKind == 0 -> TO_LATE; handle(); rk = rsKind \
    fi; \
    ra = rsA; rr = rsR; rst = rsSt; \
    if :: kind == M_CLAIM && rk == R_CLAIM -> holds[me] = 16 * rr + ra :: else -> skip fi; \
    CLEAR_RQ; CLEAR_RS

/*
 * The process dies after this step (whatever its request did): a restarted agent calls ledger.run
 * again, with a new claim_id. Every step of a caller offers it, so a crash falls between any two.
 */
#define CRASH_OR(rest) \
  if \
  :: crashes < MAXCRASH -> crashes++; holds[me] = 0; goto start \
  :: true -> rest \
  fi

/* The effect may start: a claim whose lease is live by the caller's clock. */
#ifdef BROKEN_START_AFTER_DEADLINE
#define MAY_START (holds[me] != 0)
#else
#define MAY_START (LIVE(me))
#endif

#define RESET_LOCALS ta = 0; tr = 0; out = 0; rk = 0; ra = 0; rr = 0; rst = 0; v = false

/*
 * ledger.run, as the client runs it: claim (the same claim_id again after a lost answer); on a claim,
 * heartbeat and execute once; post the outcome (the same token again after a lost answer); on
 * uncertain, reconcile and post the verdict for the attempt and downstream key it checked; then
 * start over (the next attempt, or a replay). Each labelled step is one atomic step.
 */
proctype Caller(byte me) {
  byte n;            /* claim_ids made */
  byte cid;          /* this run's claim_id */
  byte ta, tr;       /* the claim (or the attempt read): attempt, reservation */
  byte out, rk, ra, rr, rst;
  bool v;
start:
  atomic {
    RESET_LOCALS;
    if
    :: n < MAXCLAIMS -> n++; cid = me * 4 + n
    :: else -> cid = 0; goto done
    fi;
    goto claim
  }
claim:
  atomic {
    SEND(M_CLAIM, 0, 0, 0, false);
    CRASH_OR(
      if
      :: rk == R_LOST -> rk = 0; goto claim                  /* the same request, the same claim_id */
      :: rk == R_DONE -> goto start                          /* replayed: execute never runs */
      :: rk == R_WAIT && (rst == S_uncertain || rst == S_needs_reconciliation) ->
         ta = ra; tr = rr; rk = 0; ra = 0; rr = 0; rst = 0; goto verdict
      :: rk == R_WAIT && !(rst == S_uncertain || rst == S_needs_reconciliation) -> goto start   /* wait */
      :: rk == R_CLAIM -> ta = ra; tr = rr; rk = 0; ra = 0; rr = 0; rst = 0; goto execute
      fi)
  }
execute:
  atomic {
    /* a heartbeat first (or none); 409 aborts the effect's signal: the claim is lost */
    if
    :: SEND(M_BEAT, ta, tr, 0, false); if :: rk == R_CHANGED -> holds[me] = 0 :: else -> skip fi; rk = 0; ra = 0; rr = 0; rst = 0
    :: skip
    fi;
    /* execute: started only on a claim whose lease is live by the caller's clock */
    if
    :: MAY_START ->
       if :: idem && tseen[tr] -> skip :: else -> applied[tr]++; tseen[tr] = true fi;
       if :: resv == tr && TERMINAL(st) -> effAfterTerminal = true :: else -> skip fi;
       if
       :: out = S_succeeded
       :: out = S_uncertain                        /* applied, the target's answer lost */
       fi
    :: true -> out = S_uncertain                   /* aborted or timed out before the target acted */
    :: true -> out = S_failed_retryable            /* NotAppliedError: nothing was sent */
    :: true -> out = S_failed_terminal             /* TerminalToolError: the target refused */
    fi;
    holds[me] = 0;                                 /* execute returned or threw: nothing runs any more */
    CRASH_OR(goto outcome)
  }
outcome:
  atomic {
    SEND(M_OUT, ta, tr, out, false);
    CRASH_OR(
      if
      :: rk == R_LOST -> rk = 0; goto outcome                /* the same token, the same outcome */
      :: rk == R_OK && rst == S_uncertain -> rk = 0; ra = 0; rr = 0; rst = 0; out = 0; goto verdict
      :: else -> goto start     /* failed_retryable: the next attempt, same downstream key; 409: report */
      fi)
  }
verdict:
  atomic {
    /* reconcile(ctx): the caller checks the target under the attempt's downstream key, and posts */
    v = tseen[tr];
    SEND(M_VERDICT, ta, tr, 0, v);
    CRASH_OR(
      if
      :: rk == R_LOST -> rk = 0; v = false; goto verdict
      :: else -> goto start
      fi)
  }
done:
  atomic { RESET_LOCALS; holds[me] = 0 }
}

/* The request that arrives late (delayed or duplicated), at any moment; nobody hears its answer. */
proctype Network() {
end_loop:
  do
  :: atomic {
       lateKind != 0 ->
       rqKind = lateKind; rqCid = lateCid; rqA = lateA; rqR = lateR; rqOut = lateOut; rqV = lateV;
       handle();
       CLEAR_RQ; CLEAR_RS;
       lateKind = 0; lateCid = 0; lateA = 0; lateR = 0; lateOut = 0; lateV = false
     }
  od
}

/*
 * The reconciler for operations the caller executes: an expired lease becomes uncertain; an uncertain
 * attempt of a downstream-idempotent operation may be retried (failed_retryable, may have applied),
 * otherwise it waits for a verdict for MAXCHK passes, then goes to an operator; exhausted attempts are
 * closed. Nothing is ever enqueued: the caller claims.
 */
proctype Reconciler() {
end_loop:
  do
  :: atomic { ALIVE(st) && st == S_pending && leaseExp ->
       CHECKED(FROM_expire_lease(st) && TO_expire_lease(S_uncertain) && BY_expire_lease(ACT_reconciler)); st = S_uncertain }
  :: atomic { ALIVE(st) && st == S_uncertain && idem ->
       CHECKED(FROM_reconcile(st) && TO_reconcile(S_failed_retryable) && BY_reconcile(ACT_reconciler));
       st = S_failed_retryable; mayApplied = true; outAtt = 0 }
  :: atomic { ALIVE(st) && st == S_uncertain && !idem && chk + 1 < MAXCHK ->
       CHECKED(FROM_defer_attention(st) && TO_defer_attention(st) && BY_defer_attention(ACT_reconciler)); chk++ }
  :: atomic { ALIVE(st) && st == S_uncertain && !idem && chk + 1 >= MAXCHK ->
       CHECKED(FROM_reconcile(st) && TO_reconcile(S_needs_reconciliation) && BY_reconcile(ACT_reconciler)); st = S_needs_reconciliation }
  :: atomic { ALIVE(st) && st == S_failed_retryable && att >= MAXATT -> EXHAUST(ACT_reconciler) }
  od
}

/* Time: a lease ends; a terminal record's retention runs out. */
proctype Clock() {
end_loop:
  do
  :: atomic { ALIVE(st) && st == S_pending && !leaseExp -> leaseExp = true }
  :: atomic { TERMINAL(st) && !expd && resv < MAXRESV -> expd = true }
  od
}

init {
  atomic {
#ifdef IDEM
    idem = IDEM;
#else
    if :: idem = false :: idem = true fi;
#endif
    run Clock();
    run Reconciler();
    run Network();
    run Caller(1);
#ifndef ONE_CALLER
    run Caller(2)
#endif
  }
}

/* ---- properties ---- */
/* at most one caller holds a live claim of the key at a time (so one runner per claim and per attempt) */
ltl one_running_claim { [] !(LIVE(1) && LIVE(2)) }
/* at most one effect per reservation */
ltl caller_at_most_once { [] (applied[1] <= 1 && applied[2] <= 1) }
/* no effect of a reservation after its record is terminal */
ltl caller_no_effect_after_terminal { [] !effAfterTerminal }
/* an outcome is stored only on the attempt and reservation of its token */
ltl outcome_own_attempt { [] !outOther }
/* a verdict is stored only on the reservation and attempt it was checked for */
ltl verdict_own_reservation { [] !verdictOther }
