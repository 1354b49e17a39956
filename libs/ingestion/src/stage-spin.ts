/**
 * Injection token of a text that makes the DataQuality stage spin without end on a value holding it
 * (StartMessage.spinOn), standing in for a pathological input so the stall watchdog can be proven. No
 * module of the apps provides it: the test worker does (test/support/test-worker.ts).
 */
export const STAGE_SPIN_ON = 'STAGE_SPIN_ON';
