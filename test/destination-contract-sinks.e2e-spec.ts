import { contractShare, describeDestinationContract } from './support/destination-contract-suite';

/**
 * The destination contract (see test/support/destination-contract-suite.ts), second file: every
 * registered loader test/destination-contract.e2e-spec.ts does not run, on a Jest worker of its own.
 */
describeDestinationContract(contractShare('second'));
