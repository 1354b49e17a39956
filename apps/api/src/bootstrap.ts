import { ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'pino';
import { PinoNestLogger, TapyardConfig, VALIDATION_OPTIONS } from '@tapyard/core';
import { ApiModule } from './api.module';
import { ApiMetrics } from './metrics/metrics';
import { ErrorFilter } from './http/error.filter';
import { requestContextMiddleware } from './http/request-context';
import { JsonBodyInterceptor } from './http/json-body';
import { checkJsonBody, rejectNulCharacters } from './http/request-hygiene';
import { securityHeaders } from './http/security-headers';
import { consoleDirectory, serveConsole } from './http/console';
import { API_PREFIX, UNPREFIXED, setupSwagger } from './swagger';
import { assertEveryRouteDeclared } from './auth/route-audit';

/** Builds the API application without listening, so tests run exactly what production runs. */
export async function createApiApp(config: TapyardConfig, logger: Logger): Promise<NestExpressApplication> {
  const metrics = new ApiMetrics(config);
  const app = await NestFactory.create<NestExpressApplication>(ApiModule.forRoot(config, logger, metrics), {
    logger: new PinoNestLogger(logger),
    bodyParser: false,
    abortOnError: false,
  });
  app.disable('x-powered-by');
  app.use(securityHeaders);
  // Behind a TLS-terminating proxy: real client addresses (login limits) and Secure cookies.
  if (config.trustProxy !== null) app.set('trust proxy', trustProxySetting(config.trustProxy));
  if (config.trustProxy === 'true') {
    // Every X-Forwarded-For is believed: a client reaching the port directly picks its own address,
    // and the login back-off (per address) then limits nothing.
    logger.warn(
      'TRUST_PROXY=true believes any X-Forwarded-For: name the proxy instead (its address, a hop count or loopback)',
    );
  }
  app.use(requestContextMiddleware(logger, config.environment, metrics));
  app.use(rejectNulCharacters);
  const consoleDir = consoleDirectory(config.consoleDir);
  if (consoleDir !== null) app.use(serveConsole(consoleDir));
  app.useBodyParser('json', { limit: config.bodyLimitBytes, verify: checkJsonBody });
  app.setGlobalPrefix(API_PREFIX, { exclude: UNPREFIXED });
  app.useGlobalFilters(new ErrorFilter(logger));
  app.useGlobalInterceptors(new JsonBodyInterceptor());
  app.useGlobalPipes(new ValidationPipe(VALIDATION_OPTIONS));
  assertEveryRouteDeclared(app);
  setupSwagger(app, config, logger);
  return app;
}

/** `true`, a hop count, or a list of addresses/subnets/`loopback` as Express reads them. */
function trustProxySetting(value: string): boolean | number | string {
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value;
}
