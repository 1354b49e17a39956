import { Places } from './places';

describe('Places', () => {
  const settled = async (p: Promise<unknown>): Promise<boolean> => {
    let done = false;
    void p.then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    return done;
  };

  it('lets as many in as the bound, then hands each place on in arrival order', async () => {
    const places = new Places(2);
    const a = await places.enter();
    const b = await places.enter();
    const c = places.enter();
    const d = places.enter();
    expect(await settled(c)).toBe(false);
    expect(places.queued).toBe(2);
    b!();
    expect(await settled(c)).toBe(true);
    expect(await settled(d)).toBe(false);
    a!();
    expect(await settled(d)).toBe(true);
    expect(places.queued).toBe(0);
  });

  it('closed, gives the waiting jobs and any later one no place; the running keep theirs', async () => {
    const places = new Places(1);
    const a = await places.enter();
    const b = places.enter();
    places.close();
    expect(await b).toBeNull();
    expect(await places.enter()).toBeNull();
    expect(places.queued).toBe(0);
    a!();
  });

  it('a place released twice is released once', async () => {
    const places = new Places(1);
    const a = await places.enter();
    const b = places.enter();
    const c = places.enter();
    a!();
    a!();
    expect(await settled(b)).toBe(true);
    expect(await settled(c)).toBe(false);
    (await b)!();
    expect(await settled(c)).toBe(true);
    (await c)!();
    // Free again: the next one enters at once.
    expect(await settled(places.enter())).toBe(true);
  });
});
