import busboy from 'busboy';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { UnsupportedMediaTypeError, ValidationError } from '@tapyard/model';

export interface MultipartPart {
  /** The form field's name. */
  field: string;
  /** The client's file name (may be empty): a display name, never part of a path. */
  filename: string;
  mimeType: string;
  /**
   * The part's bytes. It already has an `'error'` listener, so a body cut off inside the part
   * (busboy destroys it with "Unexpected end of file") cannot crash the process; consume it with
   * `stream/promises.pipeline` (which forwards the error) or `resume()` it.
   */
  stream: Readable;
}

export interface MultipartOptions {
  limits: busboy.Limits;
  /** The 415 text when the request is not multipart/form-data. */
  notMultipart: string;
  onField?: (name: string, value: string) => void;
  /** Called once per file part, synchronously: data starts flowing as soon as it returns. */
  onFile: (part: MultipartPart) => void;
}

/**
 * Parses a multipart request to its end. Every way a body can go wrong (no boundary, a malformed or
 * truncated body, a client that disconnects, a socket error) settles the promise with a 400, and no
 * stream is left without an error listener: one hostile request must never take the process down
 * for every other caller. Resolves once the whole body is parsed; the parts' consumers may still be
 * writing.
 */
export async function readMultipart(req: IncomingMessage, options: MultipartOptions): Promise<void> {
  if (!(req.headers['content-type'] ?? '').toLowerCase().startsWith('multipart/form-data')) {
    throw new UnsupportedMediaTypeError(options.notMultipart);
  }
  let bb: busboy.Busboy;
  try {
    bb = busboy({ headers: req.headers, limits: options.limits });
  } catch {
    throw new ValidationError('malformed multipart request: missing boundary');
  }
  await new Promise<void>((resolve, reject) => {
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      req.unpipe(bb);
      // Ends any part still open (its consumer sees the error) and frees the parser.
      bb.destroy(err);
      reject(err);
    };
    if (options.onField) bb.on('field', options.onField);
    bb.on('file', (field, stream, info) => {
      // The consumer's own handling (pipeline) reports the failure; this only keeps it from being fatal.
      stream.on('error', () => undefined);
      if (settled) return void stream.resume();
      // A part its consumer destroyed (a failed write downstream) never asks busboy for more, which
      // would stall the whole body: the parse fails with the consumer's error instead, and the
      // answer (say, a 503) goes out once the rest of the body is drained.
      stream.once('close', () => {
        // busboy destroys its parts itself when the body fails (truncated, malformed): its own error
        // reports that, as a 400.
        if (stream.readableEnded || bb.destroyed) return;
        fail(stream.errored ?? new ValidationError('the file part was not read to its end'));
      });
      options.onFile({ field, filename: info.filename ?? '', mimeType: info.mimeType, stream });
    });
    bb.on('error', (err: Error) => fail(new ValidationError(`malformed multipart request: ${err.message}`)));
    bb.once('close', () => {
      if (settled) return;
      settled = true;
      resolve();
    });
    req.once('error', (err: Error) => fail(new ValidationError(`the request failed: ${err.message}`)));
    // A client that goes away mid-body ends the request without ending the multipart parse.
    req.once('close', () => {
      if (!req.complete) fail(new ValidationError('the upload was interrupted before the file ended'));
    });
    req.pipe(bb);
  });
}
