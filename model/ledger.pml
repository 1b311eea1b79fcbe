/*
 * tool-ledger's protocol for one idempotency key, as SPIN checks it.
 *
 * One DynamoDB item (the record) and everyone who writes it: callers with the same key (synchronous,
 * `respond-async`, a conflicting caller who later reuses the key after expiry), the SQS executor
 * (messages delivered at least once), two reconcilers at once, an operator, an approver, and the
 * clock (lease expiry, approval deadline, retention expiry). Workers crash at every step and lose the
 * response of their claim (or its request) and of their commit, which they verify by reading back.
 *
 * Every `atomic` block that writes the record is ONE conditional write: its guard is the write's
 * condition as the code sends it (functions/engine/transitions.ts, reconcile.ts, approval.ts,
 * resolution.ts) and its `from` states are the generated table of functions/domain/states.ts.
 * DynamoDB's single-item atomicity is the assumption that makes this one step. Reads (the GSI query,
 * GetItem) are separate steps: anything may happen between a read and the write that follows it.
 *
 * Switches (spin -D): TOOL_KIND, APPROVAL pin the tool; POLICY_CHANGE lets a deployment redeploy the
 * tool as a read and back at any moment (the policy bound to the reservation then governs); BROKEN_* are
 * deliberately wrong variants that SPIN must refute (scripts/verify/checks.ts), run with
 * NO_TABLE_ASSERTS so that the property, not the table check, is what fails; LIVENESS, RECONCILERS,
 * FIRST_MODE, FIRST_TRIES, MAXRESV and NO_SECOND_CALLER choose the cast and bounds.
 */

#include "transitions.pml"

/* ---- bounds ---- */
#ifndef MAXATT
#define MAXATT    2   /* a tool's maxAttempts */
#endif
#ifndef MAXRESV
#define MAXRESV   2   /* reservations of the key: the first and one reuse after expiry */
#endif
#define MAXCHK    2   /* reconcile checks answering unknown before an operator decides */
#define MAXMSG    1   /* messages in the work queue at once */
#ifndef MAXCRASH
#define MAXCRASH  1   /* worker crashes in one run */
#endif
#define MAXLOST   1   /* commit responses lost in one run */
#ifndef MAXLOSTCLAIM
#define MAXLOSTCLAIM 1 /* claim requests or responses lost in one run */
#endif
#ifndef FIRST_TRIES
#define FIRST_TRIES 2 /* submissions of the first caller (one retry with the same key) */
#endif

/* tool kinds */
#define T_REC  1  /* reconcilable: the target keeps a marker per downstream key (append_line) */
#define T_IDEM 2  /* downstream-idempotent: the target dedupes on the downstream key (webhook.post) */
#define T_NONE 3  /* neither: an uncertain attempt goes to an operator */

/* a tool's declared effect */
#define E_WRITE 1
#define E_READ  2

/* caller modes */
#define M_SYNC  1
#define M_ASYNC 2
#define M_EXEC  3

/* The downstream key: derived from the reservation (correct), or from tenant + operation ID only. */
#ifdef BROKEN_OLD_KEY
#define DKEY(r) 1
#else
#define DKEY(r) (r)
#endif

/* ---- the record ---- */
byte st = S_none;   /* state */
byte att;           /* attempt */
byte owner;         /* lease_owner: the worker's pid */
bool leaseExp;      /* lease_expires_at < now */
bool apprExp;       /* approval_deadline < now */
bool expd;          /* terminal and expires_at < now: treated as absent */
byte resv;          /* reservation_id (1, 2) */
byte dig;           /* arguments_digest (1, 2) */
byte chk;           /* reconcile_checks */
byte outBy;         /* outcome_by: the lease owner whose outcome is stored */
byte rpol;          /* policy: the effect the record was reserved under (E_WRITE here: reads reserve nothing) */
bool maybe;         /* maybe_applied: an uncertain attempt was retried on the target's dedupe, not its word */

/* ---- the world ---- */
byte tool;          /* the key's tool kind */
bool needAppr;      /* requiresApproval */
byte toolEff = E_WRITE; /* the tool's declared effect now: a deployment may change it (POLICY_CHANGE) */
byte msgs;          /* work messages queued (all for the current reservation) */
byte crashes;
byte lost;          /* commit responses lost */
byte lostClaim;     /* claim requests or responses lost */
bool tseen[3];      /* downstream keys the target has seen (it dedupes longer than our retention) */
bool marker[3];     /* append markers by downstream key */

/* ---- ghosts: what the properties talk about ---- */
byte applied[3];    /* effects per reservation (a deduped retry is not a new effect) */
byte rdig[3];       /* the digest each reservation was made with */
byte apprOf[3];     /* the digest an approval of each reservation named (0: none) */
byte outAtt;        /* attempt whose owner's outcome the record holds (0: none this attempt) */
bool effNoAppr;     /* an effect ran without an approval of its digest */
bool effWrongDig;   /* an effect ran with arguments other than its reservation's */
bool termChanged;   /* a write changed a terminal, unexpired record */
bool effAfterTerminal; /* an effect of the key's operation ran while its record was terminal */
bool exhaustHid;    /* attempts ran out into failed_terminal although an effect of the reservation ran */

#define ALIVE(s) (s != S_none && !(TERMINAL(s) && expd))

/* Every write: the table allows it, and it never touches a terminal record. */
#ifdef NO_TABLE_ASSERTS
#define CHECKED(allowed) \
  if :: TERMINAL(st) -> termChanged = true :: else -> skip fi
#else
#define CHECKED(allowed) \
  if :: TERMINAL(st) -> termChanged = true :: else -> skip fi; \
  assert(allowed)
#endif

/*
 * A decision (reconciler, operator) names the reservation it read, as the code's condition on
 * `reservation_id` does: a verdict read from one operation never lands on a new operation that reused
 * the expired key, however long the decision took. BROKEN_DECISION_ANY_RESV leaves it out.
 */
#ifdef BROKEN_DECISION_ANY_RESV
#define SAME_RESV(r) (true)
#else
#define SAME_RESV(r) (resv == (r))
#endif

#define ENQUEUE() if :: msgs < MAXMSG -> msgs++ :: else -> skip fi

/* Crash here: a caller dies; the executor's Lambda dies and SQS redelivers its message later. */
#define CRASH_POINT \
  if :: crashes < MAXCRASH -> crashes++; goto crashed :: true -> skip fi

/* The effect of worker (me, myResv, myAtt) with digest d, as the tool's target sees it. */
#define EFFECT(d) \
  if \
  :: tool == T_IDEM && tseen[DKEY(myResv)] -> skip /* deduped: the same effect */ \
  :: else -> applied[myResv]++; tseen[DKEY(myResv)] = true; marker[DKEY(myResv)] = true \
  fi; \
  if :: needAppr && apprOf[myResv] != rdig[myResv] -> effNoAppr = true :: else -> skip fi; \
  if :: d != rdig[myResv] -> effWrongDig = true :: else -> skip fi

/*
 * The read path, taken for a tool declared `read` now: the tool runs with no claim. If the key's
 * operation is a write the ledger reserved (the tool was redeployed since), that is its effect again.
 */
#define READ_EFFECT() \
  if \
  :: ALIVE(st) && d == dig -> applied[resv]++; \
     if :: TERMINAL(st) -> effAfterTerminal = true :: else -> skip fi; \
     if :: needAppr && apprOf[resv] != rdig[resv] -> effNoAppr = true :: else -> skip fi \
  :: else -> skip \
  fi

/*
 * The tool no longer matches the policy the record was reserved under (functions/domain/policy.ts):
 * a worker about to claim the next attempt hands the operation to an operator instead.
 */
#define DRIFT (rpol != toolEff)

/*
 * My lease is live. The code compares its own clock with its lease's deadline; while the record holds
 * that lease, that is: nobody has moved my attempt on and the lease has not expired. A phantom (a
 * claim that never landed, taken for ours by the broken read-back) has a lease only in the worker's
 * head, and its clock says it is live.
 */
#ifdef BROKEN_NO_DEADLINE
#define MAY_START (true)
#else
#define MAY_START (phantom || (resv == myResv && att == myAtt && st == S_pending && owner == _pid && !leaseExp))
#endif

/*
 * The commit's condition (SPEC step 6): attempt = n AND lease_owner = me AND state = s, where s is the
 * state the owner last read (`seen`): pending first, then what a failed condition returned.
 */
#ifdef BROKEN_LATE_APPLY
#define OWNS (true)
#else
#define OWNS (att == myAtt && owner == _pid)
#endif
#define KNOWN(o) (o == S_succeeded || o == S_failed_terminal)

/*
 * Attempts used up (exhaust_attempts, the contract's §7): failed_terminal only when every attempt is
 * known not to have applied; after an uncertain attempt retried on the target's dedupe (`maybe`), an
 * operator decides. BROKEN_EXHAUST_IGNORES_MAYBE ends every exhausted operation failed_terminal.
 */
#ifdef BROKEN_EXHAUST_IGNORES_MAYBE
#define EXHAUST_MAYBE (false)
#else
#define EXHAUST_MAYBE (maybe)
#endif
#define EXHAUST(who) \
  if \
  :: EXHAUST_MAYBE -> \
     CHECKED(FROM_exhaust_attempts(st) && TO_exhaust_attempts(S_needs_reconciliation) && BY_exhaust_attempts(who)); \
     st = S_needs_reconciliation \
  :: else -> \
     CHECKED(FROM_exhaust_attempts(st) && TO_exhaust_attempts(S_failed_terminal) && BY_exhaust_attempts(who)); \
     st = S_failed_terminal; \
     if :: applied[resv] > 0 -> exhaustHid = true :: else -> skip fi \
  fi

/* Where a caller goes after handling the record it found. */
#define A_NEXT    1
#define A_DONE    2
#define A_ATTEMPT 3
#define A_LOSTCLAIM 4   /* the claim was sent and its answer lost: the SDK retries or gives up */

/*
 * The claim (SPEC step 4): UpdateItem IF state = s AND attempt = a AND digest, s the state it was read
 * in (`seen`: queued or failed_retryable).
 */
#define CLAIM_WRITE \
  CHECKED(FROM_claim(st) && TO_claim(S_pending) && BY_claim(ACT_worker)); \
  st = S_pending; att = att + 1; owner = _pid; leaseExp = false; chk = 0; outAtt = 0; \
  myAtt = att; myResv = resv

/*
 * A claim whose retried write failed its condition is ours if the item it returns holds our lease at
 * our attempt (functions/engine/transitions.ts `claim`: lease_owner and attempt). The broken variant
 * takes the failure itself for the lost answer of its own claim.
 */
#ifdef BROKEN_CLAIM_NO_READBACK
#define CLAIM_IS_MINE (true)
#else
#define CLAIM_IS_MINE (owner == _pid && att == myAtt)
#endif

#ifdef BROKEN_NO_DIGEST_CHECK
#define DIGOK (true)
#else
#define DIGOK (dig == d)
#endif

/*
 * A record exists (SPEC step 4): conflict, replay, exhaust, re-enqueue, claim, or report. Each branch
 * is at most one conditional write whose condition re-checks everything the decision read, so the read
 * and the write are one step here without losing an interleaving.
 */
inline handle_existing() {
  if
  :: !ALIVE(st) -> act = A_NEXT                                  /* raced with expiry: try again */
#ifndef BROKEN_NO_DIGEST_CHECK
  :: ALIVE(st) && dig != d -> act = A_DONE                       /* idempotency_key_reused: nothing runs */
#endif
  :: ALIVE(st) && DIGOK && TERMINAL(st) -> act = A_DONE          /* replayed */
  :: ALIVE(st) && DIGOK && st == S_failed_retryable && att >= MAXATT ->
     EXHAUST(ACT_worker);
     act = A_NEXT
  :: ALIVE(st) && DIGOK && st == S_failed_retryable && att < MAXATT && mode == M_ASYNC -> ENQUEUE(); act = A_NEXT
  :: ALIVE(st) && DIGOK && ((st == S_failed_retryable && att < MAXATT && mode != M_ASYNC) || (st == S_queued && mode == M_EXEC)) && DRIFT ->
     CHECKED(FROM_hold_for_operator(st) && TO_hold_for_operator(S_needs_reconciliation) && BY_hold_for_operator(ACT_worker));
     st = S_needs_reconciliation; act = A_NEXT                  /* policy_changed: an operator decides */
  :: ALIVE(st) && DIGOK && ((st == S_failed_retryable && att < MAXATT && mode != M_ASYNC) || (st == S_queued && mode == M_EXEC)) && !DRIFT ->
     seen = st;
     if
     :: skip; CLAIM_WRITE; act = A_ATTEMPT; seen = 0
     :: lostClaim < MAXLOSTCLAIM -> lostClaim++; CLAIM_WRITE; act = A_LOSTCLAIM     /* landed, the response lost */
     :: lostClaim < MAXLOSTCLAIM -> lostClaim++; myAtt = att + 1; myResv = resv; act = A_LOSTCLAIM /* lost on the way */
     fi
  :: else -> act = A_NEXT                                        /* in progress or accepted: 409 or 202 */
  fi
}

proctype Caller(byte mode; byte d; byte maxTries) {
  byte tries, myAtt, myResv, out, act;
  byte seen;      /* the state this worker last read: its claim's and its commit's condition */
  bool mine, again;
  bool phantom;   /* ghost: running on a claim that never landed (only the broken read-back does) */
end_next:
  skip;
  d_step { myAtt = 0; myResv = 0; out = 0; mine = false; again = false; seen = 0; act = 0; phantom = false; if :: mode == M_EXEC -> d = 0 :: else -> skip fi };
  if
  :: mode == M_EXEC ->
     /* a delivery: the message names the current operation; the executor always claims */
     atomic {
       msgs > 0 -> msgs--; d = dig;
#ifdef BROKEN_WORKER_READ_PATH
       if
       :: toolEff == E_READ -> READ_EFFECT(); act = A_NEXT    /* the read path: run, nothing claimed */
       :: else -> handle_existing()
       fi
#else
       handle_existing()
#endif
     }
  :: mode != M_EXEC && tries < maxTries && toolEff == E_READ ->
     /* the read path: a ledger record under the key governs the call; otherwise a read of its own */
     tries++;
     atomic {
#ifdef BROKEN_READ_PATH_FIRST
       READ_EFFECT(); act = A_DONE
#else
       if
       :: ALIVE(st) -> handle_existing()
       :: else -> act = A_DONE
       fi
#endif
     }
  :: mode != M_EXEC && tries < maxTries && toolEff == E_WRITE ->
     tries++;
     /* reserve: PutItem IF attribute_not_exists(pk) OR expires_at < now; on failure the old item */
     atomic {
       if
       :: !ALIVE(st) && resv < MAXRESV ->
          resv++; myResv = resv; rdig[resv] = d; dig = d; chk = 0; outBy = 0; outAtt = 0; rpol = toolEff; maybe = false;
          leaseExp = false; apprExp = false; expd = false;
          if
          :: needAppr -> assert(FROM_reserve_awaiting_approval(S_none) && BY_reserve_awaiting_approval(ACT_reserve)); st = S_awaiting_approval; att = 0; act = A_NEXT
          :: !needAppr && mode == M_ASYNC -> assert(FROM_reserve_queued(S_none) && BY_reserve_queued(ACT_reserve)); st = S_queued; att = 0; ENQUEUE(); act = A_NEXT
          :: !needAppr && mode != M_ASYNC ->
             assert(FROM_reserve_pending(S_none) && BY_reserve_pending(ACT_reserve)); st = S_pending; att = 1; owner = _pid; myAtt = 1; act = A_ATTEMPT
          fi
       :: else -> handle_existing()
       fi
     }
  :: mode != M_EXEC && tries >= maxTries -> goto done
  fi;
dispatch:
  if
  :: act == A_ATTEMPT -> skip
  :: act == A_DONE -> goto done
  :: act == A_NEXT -> goto end_next
  :: act == A_LOSTCLAIM ->
     if
     :: true ->
        atomic {
          /* the SDK sends the same conditional write again; a failed condition returns the item (ALL_OLD) */
          if
          :: st == seen && att + 1 == myAtt && DIGOK -> CLAIM_WRITE; act = A_ATTEMPT; seen = 0
          :: else ->
             if
             :: CLAIM_IS_MINE -> phantom = !(owner == _pid && att == myAtt); act = A_ATTEMPT; seen = 0
             :: else -> skip; handle_existing()     /* someone else moved it: the record as it is now */
             fi
          fi
        }
     :: true ->
        /* the SDK gives up: the request fails; the executor's message is delivered again */
        if :: mode == M_EXEC -> atomic { ENQUEUE() } :: else -> skip fi;
        act = A_NEXT
     fi;
     goto dispatch
  fi;

attempt:
  CRASH_POINT;                                    /* between reserve/claim and the effect */
  /* execute: never started at or past the attempt's deadline; the target answers one of five ways */
  atomic {
    /*
     * A claim still held may be extended first (extend_lease: an operation its caller executes keeps its
     * claim alive while the effect runs). It keeps the state and, in this model, the lease's expiry, so
     * it is checked against the table here, in the same step, without adding interleavings.
     */
    if
    :: st == S_pending && OWNS && resv == myResv && !leaseExp ->
       CHECKED(FROM_extend_lease(st) && TO_extend_lease(st) && BY_extend_lease(ACT_owner))
    :: else -> skip
    fi;
    if
    :: MAY_START ->
       if
       :: true -> EFFECT(d); out = S_succeeded
       :: true -> EFFECT(d); out = S_uncertain    /* applied, response lost */
       :: out = S_uncertain                       /* timed out before the target acted */
       :: out = S_failed_retryable                /* nothing was sent */
       :: out = S_failed_terminal                 /* the target refused */
       fi
    :: else -> out = S_failed_retryable           /* deadline_before_start */
    fi
  }
  CRASH_POINT;                                    /* between the effect and the commit */
  /*
   * commit: UpdateItem IF attempt = n AND lease_owner = me AND state = seen, first against pending (the
   * claim or reservation it made): record_outcome, any outcome. Against a state the reconciler or an
   * operator moved it to since (uncertain, needs_reconciliation, failed_retryable), only a known outcome:
   * record_late_outcome.
   */
commit:
  atomic {
    again = false;
    if :: seen == 0 -> seen = S_pending :: else -> skip fi;
    if
    :: OWNS && st == seen && (seen == S_pending || KNOWN(out)) ->
       CHECKED((seen == S_pending && FROM_record_outcome(st) && TO_record_outcome(out) && BY_record_outcome(ACT_owner)) ||
               (seen != S_pending && FROM_record_late_outcome(st) && TO_record_late_outcome(out) && BY_record_late_outcome(ACT_late_owner)));
       st = out; outBy = _pid; outAtt = myAtt;
       mine = true
    :: else -> mine = false                        /* the condition failed: the item comes back */
    fi;
    if
    :: mine && lost < MAXLOST -> lost++; mine = false   /* the response is lost: read back */
    :: true -> skip
    fi;
    if :: mine -> seen = 0 :: else -> skip fi
  }
  if
  :: !mine ->
     /*
      * read back: our write landed if outcome_by is us at our attempt in our state. Otherwise, at our
      * attempt with our lease owner, moved to a state a known outcome still replaces: the same write
      * again, conditioned on that state. Anything else: superseded, stored only as late_outcome.
      */
     atomic {
       mine = (att == myAtt && outBy == _pid && st == out);
       again = (!mine && KNOWN(out) && OWNS && st != seen &&
                (st == S_uncertain || st == S_needs_reconciliation || st == S_failed_retryable));
       if :: again -> seen = st :: else -> seen = 0 fi
     }
     if :: again -> goto commit :: else -> skip fi
  :: else -> skip
  fi;
  if
  :: mode == M_EXEC && mine && out == S_failed_retryable -> atomic { ENQUEUE() }  /* SQS redelivers */
  :: else -> skip
  fi;
  goto end_next;
crashed:
  if
  :: mode == M_EXEC -> atomic { ENQUEUE() }; goto end_next   /* visibility timeout: delivered again */
  :: else -> skip
  fi;
done:
  skip
}

/*
 * The reconciler. Its decisions on pending, queued, failed_retryable and awaiting_approval records are
 * conditional writes that re-check what was read, so each is one step. Uncertain records are read,
 * the target is asked, and the verdict is written later under a condition on state, attempt and
 * reservation: anything may happen in between, including the other reconciler's decision and the
 * key's expiry and reuse.
 */
proctype Reconciler() {
  byte a, c, r;
  bool verdict, known, asked;
end_loop:
  do
#ifndef BROKEN_NO_LEASE_EXPIRY
  :: atomic { ALIVE(st) && st == S_pending && leaseExp ->
       CHECKED(FROM_expire_lease(st) && TO_expire_lease(S_uncertain) && BY_expire_lease(ACT_reconciler)); st = S_uncertain }
#endif
  :: atomic { ALIVE(st) && st == S_queued && msgs < MAXMSG ->   /* stale: enqueue again, look later */
       CHECKED(FROM_defer_attention(st) && TO_defer_attention(st) && BY_defer_attention(ACT_reconciler)); msgs++ }
  :: atomic { ALIVE(st) && st == S_failed_retryable && att >= MAXATT -> EXHAUST(ACT_reconciler) }
  :: atomic { ALIVE(st) && st == S_failed_retryable && att < MAXATT && msgs < MAXMSG ->
       CHECKED(FROM_defer_attention(st) && TO_defer_attention(st) && BY_defer_attention(ACT_reconciler)); msgs++ }
#ifndef BROKEN_NO_APPROVAL_EXPIRY
  :: atomic { ALIVE(st) && st == S_awaiting_approval && apprExp ->
       CHECKED(FROM_expire_approval(st) && TO_expire_approval(S_rejected) && BY_expire_approval(ACT_reconciler)); st = S_rejected }
#endif
  :: atomic { ALIVE(st) && st == S_uncertain ->
       a = att; c = chk; r = resv;
       /* ask the target */
       if
       :: tool == T_REC ->
          if
          :: known = true; verdict = marker[DKEY(r)]; asked = true
          :: known = false                            /* unknown: the target did not answer */
          fi
       :: tool == T_IDEM -> known = true; verdict = false   /* retried with the same downstream key */
#ifdef BROKEN_RETRY_UNKNOWN
       :: tool == T_NONE -> known = true; verdict = false   /* wrongly: retried as if not applied */
#else
       :: tool == T_NONE -> known = false; c = MAXCHK       /* no way to ask: an operator decides */
#endif
       fi
     }
     atomic {
       if
       :: st == S_uncertain && att == a && SAME_RESV(r) && known && verdict ->
          CHECKED(FROM_reconcile(st) && TO_reconcile(S_succeeded) && BY_reconcile(ACT_reconciler)); st = S_succeeded
       :: st == S_uncertain && att == a && SAME_RESV(r) && known && !verdict ->
          CHECKED(FROM_reconcile(st) && TO_reconcile(S_failed_retryable) && BY_reconcile(ACT_reconciler)); st = S_failed_retryable;
          if :: !asked -> maybe = true :: else -> skip fi;   /* downstream_idempotent_retry: maybe_applied */
          if :: att < MAXATT -> ENQUEUE() :: else -> skip fi
       :: st == S_uncertain && att == a && SAME_RESV(r) && !known && c + 1 >= MAXCHK ->
          CHECKED(FROM_reconcile(st) && TO_reconcile(S_needs_reconciliation) && BY_reconcile(ACT_reconciler)); st = S_needs_reconciliation
       :: st == S_uncertain && att == a && SAME_RESV(r) && !known && c + 1 < MAXCHK && chk == c ->
          CHECKED(FROM_defer_attention(st) && TO_defer_attention(st) && BY_defer_attention(ACT_reconciler)); chk = c + 1
       :: else -> skip
       fi;
       a = 0; c = 0; r = 0; verdict = false; known = false; asked = false
     }
  od
}

/*
 * The resolution's condition: state = s (the state it read), attempt = a (the one the operator names)
 * and reservation_id = r. BROKEN_RESOLVE_ANY_STATE leaves the state out, BROKEN_RESOLVE_NO_ATTEMPT the
 * attempt.
 */
#ifdef BROKEN_RESOLVE_ANY_STATE
#define RESOLVE_OK(s) (att == a)
#else
#ifdef BROKEN_RESOLVE_NO_ATTEMPT
#define RESOLVE_OK(s) (st == (s) && SAME_RESV(r))
#else
#define RESOLVE_OK(s) (st == (s) && att == a && SAME_RESV(r))
#endif
#endif
#define RESOLVABLE(x) ((x) == S_uncertain || (x) == S_needs_reconciliation)

/*
 * The verdict the operator read the target for, written; or, for an operation its caller executes, the
 * same verdict posted by an agent that checked the target (caller_verdict: applied or not applied,
 * under the same condition on state, attempt and reservation; never a terminal failure).
 */
inline RESOLVE_WRITE() {
  if
  :: was -> CHECKED(FROM_resolve(st) && TO_resolve(S_succeeded) && BY_resolve(ACT_operator)); st = S_succeeded
  :: !was -> CHECKED(FROM_resolve(st) && TO_resolve(S_failed_retryable) && BY_resolve(ACT_operator)); st = S_failed_retryable
  :: !was -> CHECKED(FROM_resolve(st) && TO_resolve(S_failed_terminal) && BY_resolve(ACT_operator)); st = S_failed_terminal
  :: was -> CHECKED(FROM_caller_verdict(st) && TO_caller_verdict(S_succeeded) && BY_caller_verdict(ACT_caller)); st = S_succeeded
  :: !was -> CHECKED(FROM_caller_verdict(st) && TO_caller_verdict(S_failed_retryable) && BY_caller_verdict(ACT_caller)); st = S_failed_retryable
  fi
}

/*
 * A truthful operator: resolves from the target's real state, naming the attempt and reservation it
 * looked at. Its write is conditioned on the state it read; if that failed because the reconciler gave
 * up in between (uncertain -> needs_reconciliation, same attempt and reservation, seen in the item the
 * failed condition returns), the verdict is written once more against that state (resolution.ts).
 */
proctype Operator() {
  byte a, r, s;
  bool was, moved;
end_loop:
  do
  :: atomic { !moved && ALIVE(st) && RESOLVABLE(st) -> a = att; r = resv; s = st; was = applied[resv] > 0 }
     atomic {
       if
       :: RESOLVE_OK(s) -> RESOLVE_WRITE()
       :: else ->
          /* the item the failed condition returned: moved to the other resolvable state? */
          moved = (st != s && RESOLVABLE(st) && att == a && SAME_RESV(r));
          if :: moved -> s = st :: else -> skip fi
       fi;
       if :: !moved -> a = 0; r = 0; s = 0; was = false :: else -> skip fi
     }
  :: atomic {
       moved ->
       /* the verdict once more, conditioned on the state found */
       if
       :: RESOLVE_OK(s) -> RESOLVE_WRITE()
       :: else -> skip
       fi;
       a = 0; r = 0; s = 0; was = false; moved = false
     }
  od
}

/*
 * An approver: decides on the digest it was shown, which may be the other caller's arguments for the
 * same key; the write names that digest, so an approval never transfers to other arguments.
 */
proctype Approver() {
  byte dg, n;
  bool ok;
end_loop:
  do
  :: n < 2 ->
     n++;
     atomic {
       ALIVE(st) && st == S_awaiting_approval ->
       ok = false;
       if :: dg = 1 :: dg = 2 fi;
       if
#ifdef BROKEN_APPROVE_ANY_DIGEST
       :: true ->
#else
       :: dig == dg ->
#endif
          if
          :: true -> CHECKED(FROM_approve(st) && TO_approve(S_queued) && BY_approve(ACT_approver)); st = S_queued; apprOf[resv] = dg; ok = true
          :: true -> CHECKED(FROM_reject(st) && TO_reject(S_rejected) && BY_reject(ACT_approver)); st = S_rejected
          fi
       :: else -> skip                                /* approval_mismatch */
       fi
     }
     if :: ok -> atomic { ENQUEUE() } :: else -> skip fi;
     d_step { dg = 0; ok = false }
  :: n >= 2 -> break
  od
}

/* Time: a lease ends, an approval deadline passes, a terminal record's retention runs out. */
proctype Clock() {
end_loop:
  do
  :: atomic { st == S_pending && !leaseExp -> leaseExp = true }
  :: atomic { st == S_awaiting_approval && !apprExp -> apprExp = true }
  /*
   * Retention runs out, at any moment, also while a decision is between its read and its write (the
   * decisions name their reservation). Assumed: no message outlives its record (the synth-time
   * retention check and not_after).
   */
  :: atomic { TERMINAL(st) && !expd && resv < MAXRESV -> expd = true; msgs = 0 }
#ifdef POLICY_CHANGE
  /*
   * A deployment redeploys the tool as a read (an upstream's new readOnlyHint), at any moment, and
   * back as a write (an upstream that changes its hints between listings).
   */
  :: atomic { toolEff == E_WRITE -> toolEff = E_READ }
  :: atomic { toolEff == E_READ -> toolEff = E_WRITE }
#endif
  od
}

/*
 * The cast. Defaults: a caller with the key (FIRST_MODE: sync or respond-async), a second caller with
 * the same key and other arguments (a conflict, or a new operation once the record expired), the SQS
 * executor, RECONCILERS reconcilers, an operator, an approver where the tool needs one, the clock.
 */
#ifndef FIRST_MODE
#define FIRST_MODE M_SYNC
#endif
#ifndef RECONCILERS
#define RECONCILERS 1
#endif
init {
  atomic {
#ifdef TOOL_KIND
    tool = TOOL_KIND;
#else
    if :: tool = T_REC :: tool = T_IDEM :: tool = T_NONE fi;
#endif
#ifdef APPROVAL
    needAppr = APPROVAL;
#else
    if :: needAppr = false :: needAppr = true fi;
#endif
    run Clock();
    run Reconciler();
#if RECONCILERS > 1
    run Reconciler();
#endif
    run Operator();
    if :: needAppr -> run Approver() :: else -> skip fi;
    run Caller(FIRST_MODE, 1, FIRST_TRIES);
#ifndef NO_SECOND_CALLER
    run Caller(M_SYNC, 2, 1);
#endif
    run Caller(M_EXEC, 0, 0)
  }
}

/* ---- properties ---- */
/* at most one effect per reservation */
ltl at_most_once { [] (applied[1] <= 1 && applied[2] <= 1) }
/* an effect only after an approval of that digest where approval is required */
ltl approved_digest { [] !effNoAppr }
/* a terminal record never changes */
ltl terminal_immutable { [] !termChanged }
/* no effect runs with arguments other than its reservation's (a different digest is a conflict) */
ltl digest_bound { [] !effWrongDig }
/* a superseded attempt's outcome is never applied */
ltl superseded_ignored { [] (outAtt == 0 || outAtt == att) }
/* a success is this reservation's own effect: never swallowed by a dedupe or an old marker */
ltl success_is_own_effect { [] (st == S_succeeded -> applied[resv] > 0) }
/* no effect of the key's operation after its record is terminal, whatever the tool is redeployed as */
ltl no_effect_after_terminal { [] !effAfterTerminal }
/* attempts that ran out end failed_terminal only when no attempt applied; otherwise an operator decides */
ltl exhausted_truthful { [] !exhaustHid }
/* every operation eventually terminal or in front of an operator (weak fairness, bounded crashes) */
ltl settles { [] (ALIVE(st) -> <> (TERMINAL(st) || st == S_needs_reconciliation)) }
