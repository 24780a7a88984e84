/** The delivery log's `error` while an attempt awaits its answer, and once a crash cut it short. */
export const IN_PROGRESS = "In progress"
export const INTERRUPTED =
  "Interrupted: the process stopped before the answer was recorded (the receiver may have got it)"
