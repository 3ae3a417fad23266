/**
 * What a form shows of the mutation it submits through: pending disables its
 * button, the error shows beside it, success may say "Saved.". A TanStack
 * Query mutation result is one, so a page passes its mutation as it is.
 */
export interface SubmitState {
  isPending: boolean;
  isSuccess: boolean;
  error: unknown;
}
