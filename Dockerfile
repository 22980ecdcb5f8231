FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN useradd --system --uid 10001 dispatch && mkdir -p /data && chown dispatch /data
USER dispatch
EXPOSE 8796
CMD ["python", "manage.py", "serve", "--host", "0.0.0.0"]
